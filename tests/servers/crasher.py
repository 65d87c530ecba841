"""A "server" that prints to stderr and dies before answering anything (`initialize` or `server/discover`)."""

import sys

print("crasher: starting up", file=sys.stderr)
print("crasher: FATAL missing configuration KITCHEN_TOKEN", file=sys.stderr, flush=True)
sys.exit(2)
