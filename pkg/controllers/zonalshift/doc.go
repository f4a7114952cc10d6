// Package zonalshift polls the cluster's ARC zonal shifts (ENABLE_ZONAL_SHIFT=true) so the cloud provider keeps
// launches out of shifted zones, and tells each affected NodePool with the events ZonalShiftActive and
// ZonalShiftCleared.
package zonalshift
