package awssim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// jsonHandler serves one JSON-protocol action: it gets the raw request body and returns a value to encode.
type jsonHandler func(r *http.Request, a *account, body []byte) (any, *apiError)

func (s *Simulator) serveJSON(w http.ResponseWriter, r *http.Request, a *account, version, action string, handlers map[string]jsonHandler) {
	service := map[string]string{"AmazonSSM": "ssm", "AWSPriceListService": "pricing", "AmazonSQS": "sqs", "AWSEvents": "events"}[serviceOfTarget(r.Header.Get("X-Amz-Target"))]
	if err := s.applyFaults(r, service, action); err != nil {
		writeJSONError(w, version, err)
		return
	}
	h, ok := handlers[action]
	if !ok {
		s.log.Warn("unsupported JSON action", "target", r.Header.Get("X-Amz-Target"))
		writeJSONError(w, version, errBadRequest("UnknownOperationException", "awssim does not simulate %s", r.Header.Get("X-Amz-Target")))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeJSONError(w, version, errBadRequest("SerializationException", "reading body: %v", err))
		return
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	out, apiErr := h(r, a, body)
	if apiErr != nil {
		s.log.Debug("JSON call failed", "target", r.Header.Get("X-Amz-Target"), "code", apiErr.Code, "message", apiErr.Message)
		writeJSONError(w, version, apiErr)
		return
	}
	b, mErr := json.Marshal(out)
	if mErr != nil {
		writeJSONError(w, version, &apiError{Status: http.StatusInternalServerError, Code: "InternalError", Message: mErr.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-"+version)
	w.Header().Set("X-Amzn-RequestId", s.requestID())
	_, _ = w.Write(b)
}

func serviceOfTarget(target string) string {
	for i := 0; i < len(target); i++ {
		if target[i] == '.' {
			return target[:i]
		}
	}
	return target
}

func writeJSONError(w http.ResponseWriter, version string, e *apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-"+version)
	if e.QueryCode != "" {
		fault := "Receiver"
		if e.Sender {
			fault = "Sender"
		}
		w.Header().Set("X-Amzn-Query-Error", e.QueryCode+";"+fault)
	}
	w.WriteHeader(e.Status)
	b, _ := json.Marshal(map[string]string{"__type": e.Code, "message": e.Message})
	_, _ = w.Write(b)
}

func decodeJSON(body []byte, v any) *apiError {
	if err := json.Unmarshal(body, v); err != nil {
		return errBadRequest("SerializationException", "cannot decode request body: %v", err)
	}
	return nil
}

func errJSONValidation(format string, args ...any) *apiError {
	return errBadRequest("ValidationException", "%s", fmt.Sprintf(format, args...))
}
