"""The integration suite's modules; tests/integration/run-integration runs them."""
