"""The service's route groups, one APIRouter each, built per Runtime (``router(runtime)``); their
handlers are plain Starlette routes: no FastAPI dependency solving per request."""
