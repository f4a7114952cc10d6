// Package zonalshift follows the ARC zonal shifts of the EKS cluster (ENABLE_ZONAL_SHIFT): which zone IDs traffic
// is shifted away from, read with GetManagedResource on the cluster's ARN, so launches avoid those zones.
package zonalshift
