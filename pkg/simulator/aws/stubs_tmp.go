package awssim

import "net/http"

func (s *Simulator) pricingHandlers() map[string]jsonHandler                               { return nil }
func (s *Simulator) sqsHandlers() map[string]jsonHandler                                   { return nil }
func (s *Simulator) serveEKS(w http.ResponseWriter, r *http.Request, a *account)           {}
func (s *Simulator) serveIAM(w http.ResponseWriter, r *http.Request, a *account, p params) {}
func (s *Simulator) serveAdmin(w http.ResponseWriter, r *http.Request)                     {}

const iamVersion = "2010-05-08"
const adminPrefix = "/_awssim/"

type instanceProfile struct{}
type role struct {
	Name, ID string
	Created  interface{}
}
type queue struct{}

func newQueue(string) *queue { return &queue{} }
