// Package interruption parses the EventBridge messages an interruption queue (SQS) delivers — spot interruption
// warnings, rebalance recommendations, instance state changes and AWS Health scheduled changes — and decides,
// per NodePool policy, what to do with the NodeClaim they concern. It is pure: no clients, no clock of its own.
package interruption
