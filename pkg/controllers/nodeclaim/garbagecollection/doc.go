// Package garbagecollection reconciles the cloud with the cluster: NodeClaims whose instance no longer exists are
// deleted, and instances this cluster launched that no NodeClaim accounts for (leaked, older than a grace
// period) are terminated.
package garbagecollection
