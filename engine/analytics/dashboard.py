"""The live HTML page served at `/`."""

PAGE = "<html><body>dashboard</body></html>"
