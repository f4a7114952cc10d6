// Package instancestatus polls the cloud's instance status checks (EC2 DescribeInstanceStatus, one batched pass
// a minute) and replaces the instances of this cluster whose instance or system check has failed for two
// minutes, or that have a scheduled event. It runs whatever INTERRUPTION_QUEUE says; pkg/interruption decides.
package instancestatus
