"""The REST gateway (design §6): a stateless FastAPI face over the brokers and ZooKeeper."""
