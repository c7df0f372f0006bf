"""Teams on GitHub: start and hold, the queue, requests between repositories and their filing, citations,
satellites, supervision.
"""
