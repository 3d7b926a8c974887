import pytest

# The shared checks' asserts explain their failures like a test's own (before their import).
pytest.register_assert_rewrite("tests.compat.scenarios")
