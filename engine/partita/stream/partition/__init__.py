"""The lifecycle of one partition task: opening, replaying, processing, closing (`task`), and
how a stopped or wedged partition says so (`stopped`, `wedged`).
"""
