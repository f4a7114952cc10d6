package awssim

import "net/http"

// cancelCapacityReservation answers EC2 CancelCapacityReservation: an active On-Demand Capacity Reservation
// becomes cancelled, takes no more launches, and its running instances go on as plain on-demand instances (no
// capacityReservationId any more), as when it expires. A Capacity Block cannot be cancelled.
func (s *Simulator) cancelCapacityReservation(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	id := p.get("CapacityReservationId")
	if id == "" {
		return nil, errMissingParam("CapacityReservationId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cr := a.reservationByID(id)
	if cr == nil {
		return nil, errBadRequest("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
	}
	if cr.ReservationType == "capacity-block" {
		return nil, errBadRequest("UnsupportedOperation", "Capacity Block %s cannot be cancelled", id)
	}
	if cr.State != "active" {
		return nil, errBadRequest("IncorrectState", "The capacity reservation %s is in state %s and cannot be cancelled", id, cr.State)
	}
	cr.State, cr.Available = "cancelled", 0
	a.releaseReservationInstancesLocked(id)
	s.log.Info("capacity reservation cancelled", "capacity-reservation-id", id)
	return []*el{B("return", true)}, nil
}

// releaseReservationInstancesLocked makes the instances of an ended reservation plain on-demand instances.
func (a *account) releaseReservationInstancesLocked(id string) {
	for _, i := range a.instances {
		if i.CapacityReservationID == id {
			i.CapacityReservationID = ""
		}
	}
}
