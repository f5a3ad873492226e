"""The message domain: messages on their partition (murmur2 of the correlation key) and the
subscriptions that connect them to waiting element instances on theirs.

- `processors`: MESSAGE PUBLISH and EXPIRE, with the due-date checker of expiry;
- `subscriptions`: MESSAGE_SUBSCRIPTION CREATE, CORRELATE, REJECT and DELETE (the message's
  partition);
- `process_subscriptions`: PROCESS_MESSAGE_SUBSCRIPTION CORRELATE (the instance's partition);
- `correlation`: a message meets a subscription (MESSAGE_SUBSCRIPTION CORRELATING);
- `start_events`: a published message starts instances at message start events;
- `appliers`: MESSAGE, MESSAGE_SUBSCRIPTION, PROCESS_MESSAGE_SUBSCRIPTION and
  MESSAGE_START_EVENT_SUBSCRIPTION events;
- `state`: their column families.
"""
