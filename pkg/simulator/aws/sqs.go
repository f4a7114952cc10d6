package awssim

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

type queue struct {
	Name     string
	messages []*message
}

type message struct {
	ID, Body, Receipt string
	Sent, VisibleAt   time.Time
	Receives          int
}

func newQueue(name string) *queue { return &queue{Name: name} }

func (s *Simulator) sqsHandlers() map[string]jsonHandler {
	return map[string]jsonHandler{
		"GetQueueUrl":        s.sqsGetQueueURL,
		"CreateQueue":        s.sqsCreateQueue,
		"SendMessage":        s.sqsSendMessage,
		"ReceiveMessage":     s.sqsReceiveMessage,
		"DeleteMessage":      s.sqsDeleteMessage,
		"GetQueueAttributes": s.sqsGetQueueAttributes,
		"PurgeQueue":         s.sqsPurgeQueue,
		"ListQueues":         s.sqsListQueues,
	}
}

func errNoQueue(name string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "com.amazonaws.sqs#QueueDoesNotExist",
		Message: fmt.Sprintf("The specified queue %s does not exist.", name), QueryCode: "AWS.SimpleQueueService.NonExistentQueue", Sender: true}
}

func (s *Simulator) queueURL(r *http.Request, a *account, name string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/%s/%s", scheme, r.Host, a.number, name)
}

var sqsNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,80}(\.fifo)?$`)

// queueByURLLocked finds a queue by URL: the path is /<account number>/<name>; the account need not be the
// caller's (a queue shared across accounts stays reachable by URL).
func (s *Simulator) queueByURLLocked(caller *account, raw string) (*queue, *apiError) {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil, errNoQueue(raw)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 {
		return nil, errNoQueue(raw)
	}
	owner := caller
	if parts[0] != caller.number {
		owner = nil
		for _, a := range s.accounts {
			if a.number == parts[0] {
				owner = a
			}
		}
	}
	if owner == nil {
		return nil, errNoQueue(raw)
	}
	q, ok := owner.queues[parts[1]]
	if !ok {
		return nil, errNoQueue(raw)
	}
	return q, nil
}

func (s *Simulator) sqsGetQueueURL(r *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ QueueName, QueueOwnerAWSAccountId string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	owner := a
	if in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != a.number {
		owner = nil
		for _, x := range s.accounts {
			if x.number == in.QueueOwnerAWSAccountId {
				owner = x
			}
		}
		if owner == nil {
			return nil, errNoQueue(in.QueueName)
		}
	}
	if _, ok := owner.queues[in.QueueName]; !ok {
		return nil, errNoQueue(in.QueueName)
	}
	return map[string]string{"QueueUrl": s.queueURL(r, owner, in.QueueName)}, nil
}

func (s *Simulator) sqsCreateQueue(r *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ QueueName string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	if !sqsNameRE.MatchString(in.QueueName) {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterValue", QueryCode: "InvalidParameterValue", Sender: true,
			Message: fmt.Sprintf("Queue name %q must be 1-80 characters of letters, digits, - and _", in.QueueName)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := a.queues[in.QueueName]; !ok {
		a.queues[in.QueueName] = newQueue(in.QueueName)
	}
	return map[string]string{"QueueUrl": s.queueURL(r, a, in.QueueName)}, nil
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (s *Simulator) sqsSendMessage(_ *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct {
		QueueUrl     string
		MessageBody  string
		DelaySeconds int
	}
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	if in.MessageBody == "" {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "com.amazonaws.sqs#MissingParameter", QueryCode: "MissingParameter",
			Sender: true, Message: "The request must contain the parameter MessageBody."}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueByURLLocked(a, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	m := s.enqueueLocked(q, in.MessageBody, time.Duration(in.DelaySeconds)*time.Second)
	return map[string]string{"MessageId": m.ID, "MD5OfMessageBody": md5Hex(m.Body)}, nil
}

func (s *Simulator) enqueueLocked(q *queue, body string, delay time.Duration) *message {
	now := s.clock.Now()
	m := &message{ID: uuidLike(s.nextIDLocked("m")), Body: body, Sent: now, VisibleAt: now.Add(delay)}
	q.messages = append(q.messages, m)
	close(s.wake)
	s.wake = make(chan struct{})
	return m
}

func uuidLike(seed string) string {
	h := shortHash(seed, 32)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

type sqsMessageJSON struct {
	MessageId     string
	ReceiptHandle string
	MD5OfBody     string
	Body          string
	Attributes    map[string]string `json:",omitempty"`
}

// MaxLongPoll bounds ReceiveMessage WaitTimeSeconds, as SQS does.
const MaxLongPoll = 20 * time.Second

func (s *Simulator) sqsReceiveMessage(r *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct {
		QueueUrl            string
		MaxNumberOfMessages *int
		WaitTimeSeconds     *int
		VisibilityTimeout   *int
	}
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	maxN := 1
	if in.MaxNumberOfMessages != nil {
		maxN = *in.MaxNumberOfMessages
	}
	if maxN < 1 || maxN > 10 {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "com.amazonaws.sqs#InvalidParameterValue", QueryCode: "InvalidParameterValue",
			Sender: true, Message: fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxN)}
	}
	wait := time.Duration(0)
	if in.WaitTimeSeconds != nil {
		wait = time.Duration(*in.WaitTimeSeconds) * time.Second
	}
	if wait < 0 || wait > MaxLongPoll {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "com.amazonaws.sqs#InvalidParameterValue", QueryCode: "InvalidParameterValue",
			Sender: true, Message: "Value for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."}
	}
	vis := 30 * time.Second
	if in.VisibilityTimeout != nil {
		vis = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	ctx := r.Context()
	var timer <-chan time.Time
	if wait > 0 {
		t := s.clock.NewTimer(wait)
		defer t.Stop()
		timer = t.C()
	}
	for {
		s.mu.Lock()
		q, err := s.queueByURLLocked(a, in.QueueUrl)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		now := s.clock.Now()
		out := []sqsMessageJSON{}
		for _, m := range q.messages {
			if len(out) >= maxN {
				break
			}
			if now.Before(m.VisibleAt) {
				continue
			}
			m.Receives++
			m.VisibleAt = now.Add(vis)
			m.Receipt = shortHash(fmt.Sprintf("%s/%d/%d", m.ID, m.Receives, now.UnixNano()), 40)
			out = append(out, sqsMessageJSON{MessageId: m.ID, ReceiptHandle: m.Receipt, MD5OfBody: md5Hex(m.Body), Body: m.Body,
				Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(m.Receives),
					"SentTimestamp": fmt.Sprint(m.Sent.UnixMilli())}})
		}
		wake := s.wake
		s.mu.Unlock()
		if len(out) > 0 || timer == nil {
			return map[string]any{"Messages": out}, nil
		}
		if !waitForMessage(ctx, wake, timer) {
			return map[string]any{"Messages": out}, nil
		}
	}
}

// waitForMessage blocks until a message is sent (true), or the poll ends (false).
func waitForMessage(ctx context.Context, wake <-chan struct{}, timer <-chan time.Time) bool {
	select {
	case <-wake:
		return true
	case <-timer:
		return false
	case <-ctx.Done():
		return false
	}
}

func (s *Simulator) sqsDeleteMessage(_ *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ QueueUrl, ReceiptHandle string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueByURLLocked(a, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	for i, m := range q.messages {
		if m.Receipt != "" && m.Receipt == in.ReceiptHandle {
			q.messages = append(q.messages[:i], q.messages[i+1:]...)
			return map[string]any{}, nil
		}
	}
	return nil, &apiError{Status: http.StatusBadRequest, Code: "com.amazonaws.sqs#ReceiptHandleIsInvalid", QueryCode: "ReceiptHandleIsInvalid",
		Sender: true, Message: fmt.Sprintf("The input receipt handle \"%s\" is not a valid receipt handle.", in.ReceiptHandle)}
}

func (s *Simulator) sqsGetQueueAttributes(r *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ QueueUrl string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueByURLLocked(a, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	visible, inflight := 0, 0
	for _, m := range q.messages {
		if now.Before(m.VisibleAt) {
			inflight++
		} else {
			visible++
		}
	}
	arn := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.opts.Region, a.number, q.Name)
	return map[string]any{"Attributes": map[string]string{
		"QueueArn":                              arn,
		"Policy":                                s.queuePolicyLocked(arn),
		"ApproximateNumberOfMessages":           fmt.Sprint(visible),
		"ApproximateNumberOfMessagesNotVisible": fmt.Sprint(inflight),
		"MessageRetentionPeriod":                "300",
		"ReceiveMessageWaitTimeSeconds":         "20",
	}}, nil
}

func (s *Simulator) sqsPurgeQueue(_ *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ QueueUrl string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueByURLLocked(a, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	q.messages = nil
	return map[string]any{}, nil
}
