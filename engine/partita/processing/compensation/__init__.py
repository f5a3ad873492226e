"""Compensation subscriptions: what a completed compensable activity leaves behind so that a
compensation throw or end event of its scope can invoke its handler
(`element.compensation` writes them; this domain keeps them)."""
