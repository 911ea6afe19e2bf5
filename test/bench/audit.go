package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"

	"github.com/seedlabs/webhook-operator/internal/operator"
)

// auditLog reads the API server's audit log of the manager's requests.
type auditLog struct {
	path string
}

// auditEvent is the part of an audit.k8s.io/v1 Event the bench counts by.
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
}

// offset is where the next request's entry will start.
func (a *auditLog) offset() (int64, error) {
	info, err := os.Stat(a.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// requests counts the entries from offset on by "verb resource[/subresource]", leaving out leader
// election (the Lease, and the Event a new leader posts) and marking dry runs.
func (a *auditLog) requests(offset int64) (map[string]int, error) {
	return a.count(offset, false)
}

// writes counts the write entries from offset on by "verb resource[/subresource] namespace/name".
func (a *auditLog) writes(offset int64) (map[string]int, error) {
	return a.count(offset, true)
}

func (a *auditLog) count(offset int64, writesByName bool) (map[string]int, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, 0); err != nil {
		return nil, err
	}
	out := map[string]int{}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for scanner.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil || ev.ObjectRef == nil {
			continue
		}
		resource := ev.ObjectRef.Resource
		if resource == "leases" || isLeaderElectionEvent(ev) {
			continue
		}
		if ev.ObjectRef.Subresource != "" {
			resource += "/" + ev.ObjectRef.Subresource
		}
		key := ev.Verb + " " + resource
		if strings.Contains(ev.RequestURI, "dryRun=All") {
			key += " (dry run)"
		}
		if writesByName {
			if !isWrite(key) {
				continue
			}
			key += " " + ev.ObjectRef.Namespace + "/" + ev.ObjectRef.Name
		}
		out[key]++
	}
	return out, scanner.Err()
}

// isLeaderElectionEvent reports whether ev records the Event a manager posts on becoming leader.
func isLeaderElectionEvent(ev auditEvent) bool {
	return ev.ObjectRef.Resource == "events" && ev.ObjectRef.Namespace == leaseNamespace &&
		strings.HasPrefix(ev.ObjectRef.Name, operator.LeaderElectionID+".")
}

// isWrite reports whether a requests key is a write.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}
