"""The REST gateway (design §6). Not built yet: `pafka gateway` says so and exits 2."""
