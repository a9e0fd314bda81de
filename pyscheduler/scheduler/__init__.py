"""The scheduler: the cluster context (partitions, RM message handling), configuration
application, and (next) the scheduling cycle and health checks."""
