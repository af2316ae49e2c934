"""The HTTP and gRPC faces of a served grader, their edge bounds and auth, and `GraderServer`
(one engine behind both ports). Parsing and status codes, never the reward."""
