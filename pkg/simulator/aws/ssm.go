package awssim

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

func (s *Simulator) ssmHandlers() map[string]jsonHandler {
	return map[string]jsonHandler{
		"GetParameter":  s.ssmGetParameter,
		"GetParameters": s.ssmGetParameters,
	}
}

type ssmParameterJSON struct {
	Name             string  `json:"Name"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int64   `json:"Version"`
	ARN              string  `json:"ARN"`
	DataType         string  `json:"DataType"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
}

func (s *Simulator) ssmParamJSON(p *ssmParam) ssmParameterJSON {
	return ssmParameterJSON{Name: p.Name, Type: "String", Value: p.Value, Version: p.Version,
		ARN:      fmt.Sprintf("arn:aws:ssm:%s::parameter%s", s.opts.Region, p.Name),
		DataType: p.DataType, LastModifiedDate: float64(p.Modified.UnixMilli()) / 1000}
}

func (s *Simulator) ssmGetParameter(_ *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ Name string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	if in.Name == "" {
		return nil, errJSONValidation("1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := a.ssm[strings.TrimSuffix(in.Name, ":$LATEST")]
	if !ok {
		return nil, errBadRequest("ParameterNotFound", "Parameter %s not found.", in.Name)
	}
	return map[string]any{"Parameter": s.ssmParamJSON(p)}, nil
}

func (s *Simulator) ssmGetParameters(_ *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ Names []string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := []ssmParameterJSON{}
	invalid := []string{}
	for _, n := range in.Names {
		if p, ok := a.ssm[n]; ok {
			found = append(found, s.ssmParamJSON(p))
		} else {
			invalid = append(invalid, n)
		}
	}
	sort.Strings(invalid)
	return map[string]any{"Parameters": found, "InvalidParameters": invalid}, nil
}
