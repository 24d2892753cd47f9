"""Clients of Pilot Web that run elsewhere (CI jobs): standard library only, importing nothing of the project."""
