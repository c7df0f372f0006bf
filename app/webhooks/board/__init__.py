"""The operators' board: the web pages, their sign-in and session, the data they show, the pinned board issue and
its commands.
"""
