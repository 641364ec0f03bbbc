"""The one HTTP client every call goes through (on aiohttp), and the reader of server-sent
events."""
