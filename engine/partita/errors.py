"""Errors shared by the command line and configuration. Packages define their own beside these."""


class PartitaError(Exception):
    """Base of every error Partita raises on purpose. The message says what to do."""


class ConfigError(PartitaError):
    """A setting is invalid; the message names the setting and the accepted values."""
