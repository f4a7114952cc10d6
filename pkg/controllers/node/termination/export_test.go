package termination

// EvictionSlotWait exposes evictionSlotWait to the package's tests.
const EvictionSlotWait = evictionSlotWait

// TakeEvictionSlots takes every eviction slot, as evictions in flight on other nodes would, and returns a func
// that frees them.
func (c *Controller) TakeEvictionSlots() (release func()) {
	for i := 0; i < cap(c.evictions); i++ {
		c.evictions <- struct{}{}
	}
	return func() {
		for i := 0; i < cap(c.evictions); i++ {
			<-c.evictions
		}
	}
}

// ForgetWrite drops the copy of the named NodeClaim the controller last wrote, as a controller without the memo
// would have none.
func (c *Controller) ForgetWrite(name string) { c.written.Forget(name) }
