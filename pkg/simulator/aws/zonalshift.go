package awssim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ZonalShift is one ARC zonal shift of the cluster: traffic is moved away from the zone AwayFrom (a zone ID, e.g.
// usw2-az1) until Expiry.
type ZonalShift struct {
	ID       string    `json:"zonalShiftId"`
	AwayFrom string    `json:"awayFrom"`
	Comment  string    `json:"comment,omitempty"`
	Start    time.Time `json:"startTime"`
	Expiry   time.Time `json:"expiryTime"`
}

// StartZonalShift starts a zonal shift of the cluster away from the zone ID for d (the admin API's
// POST zonal-shifts) and returns it.
func (s *Simulator) StartZonalShift(awayFrom string, d time.Duration, comment string) (ZonalShift, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	known := false
	for _, z := range s.zones {
		known = known || z.ID == awayFrom
	}
	if !known {
		return ZonalShift{}, fmt.Errorf("awayFrom %q is not a zone ID of the region", awayFrom)
	}
	if d <= 0 {
		return ZonalShift{}, fmt.Errorf("the shift must last a positive time, got %s", d)
	}
	s.seq++
	now := s.clock.Now().UTC().Truncate(time.Second)
	zs := ZonalShift{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", s.seq, s.seq), AwayFrom: awayFrom, Comment: comment,
		Start: now, Expiry: now.Add(d)}
	s.zonalShifts = append(s.zonalShifts, zs)
	return zs, nil
}

// CancelZonalShift ends a zonal shift (DELETE zonal-shifts/{id}); it reports whether the shift was active.
func (s *Simulator) CancelZonalShift(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, zs := range s.zonalShifts {
		if zs.ID == id {
			s.zonalShifts = append(s.zonalShifts[:i:i], s.zonalShifts[i+1:]...)
			return true
		}
	}
	return false
}

// ZonalShifts returns the cluster's zonal shifts that have not expired (GET zonal-shifts).
func (s *Simulator) ZonalShifts() []ZonalShift {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activeZonalShiftsLocked()
}

func (s *Simulator) activeZonalShiftsLocked() []ZonalShift {
	now := s.clock.Now()
	out := []ZonalShift{}
	for _, zs := range s.zonalShifts {
		if zs.Expiry.After(now) {
			out = append(out, zs)
		}
	}
	return out
}

// serveARCZonalShift answers ARC zonal shift GetManagedResource (REST GET /managedresources/{resourceIdentifier})
// for the cluster, which is registered with zonal shift: its active shifts, all applied.
func (s *Simulator) serveARCZonalShift(w http.ResponseWriter, r *http.Request, a *account) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/managedresources/")
	id, err := url.PathUnescape(raw)
	if err != nil || id == "" || strings.Contains(id, "/") && !strings.HasPrefix(id, "arn:") {
		writeRESTError(w, errBadRequest("ValidationException", "invalid resourceIdentifier %q", raw))
		return
	}
	if err := s.applyFaults(r, "arc-zonal-shift", "GetManagedResource"); err != nil {
		writeRESTError(w, err)
		return
	}
	clusterARN := fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", s.opts.Region, a.number, s.opts.ClusterName)
	if err := s.authorize(a, "arc-zonal-shift", func() []authzCheck {
		return []authzCheck{{action: "arc-zonal-shift:GetManagedResource", resource: id}}
	}); err != nil {
		writeRESTError(w, err)
		return
	}
	if id != clusterARN && id != s.opts.ClusterName {
		writeRESTError(w, errNotFound("ResourceNotFoundException", "The resource %s is not registered with zonal shift.", id))
		return
	}
	s.mu.Lock()
	active := s.activeZonalShiftsLocked()
	s.mu.Unlock()
	weights := map[string]float64{}
	for _, z := range s.zones {
		weights[z.ID] = 1
	}
	shifts := []map[string]any{}
	for _, zs := range active {
		weights[zs.AwayFrom] = 0
		shifts = append(shifts, map[string]any{
			"zonalShiftId": zs.ID, "resourceIdentifier": clusterARN, "awayFrom": zs.AwayFrom, "comment": zs.Comment,
			"startTime": float64(zs.Start.Unix()), "expiryTime": float64(zs.Expiry.Unix()), "appliedStatus": "APPLIED",
		})
	}
	b, _ := json.Marshal(map[string]any{
		"arn": clusterARN, "name": s.opts.ClusterName, "appliedWeights": weights, "zonalShifts": shifts,
		"autoshifts": []any{}, "zonalAutoshiftStatus": "DISABLED",
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", s.requestID())
	_, _ = w.Write(b)
}
