"""Training-side entry files and launch recipes. Not installed: the adapters themselves are the
`arbiter.adapters` package of the arbiter-client distribution (client/); the files here are the
paths a framework loads by file name."""
