"""The SASL failure every mechanism raises, in a module of its own so that a
broker's connections can catch it without importing SCRAM (hashlib, hmac,
secrets) before a listener needs it."""


class AuthenticationFailed(Exception):
    """Bad credentials or a broken exchange: SASL_AUTHENTICATION_FAILED, then close."""
