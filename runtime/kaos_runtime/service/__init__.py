"""The agent's FastAPI service: the app factory and one router per route group."""
