/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controlplane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// AuditEvent is the part of an audit.k8s.io/v1 Event that tests read.
type AuditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *metav1.Status `json:"responseStatus"`
	// SourceIPs are the client's addresses, the first its own: a pod's IP
	// tells which pod made the request.
	SourceIPs []string `json:"sourceIPs"`
	// Received is when the API server received the request.
	Received    metav1.MicroTime  `json:"requestReceivedTimestamp"`
	Annotations map[string]string `json:"annotations"`
}

// Request names the request as "verb group/resource[/subresource]", the
// form GrantedRules gives.
func (e *AuditEvent) Request() string {
	res := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		res += "/" + e.ObjectRef.Subresource
	}
	return e.Verb + " " + e.ObjectRef.APIGroup + "/" + res
}

// Forbidden tells whether RBAC refused the request (admission also answers
// 403, for instance in a namespace being deleted).
func (e *AuditEvent) Forbidden() bool {
	return e.Annotations["authorization.k8s.io/decision"] == "forbid"
}

// AuditEvents returns the completed requests on objects that user made with
// a user agent starting with agent, written at or after byte offset from of
// the audit log (Options.AuditServiceAccounts), and the offset where the log
// ends.
func (c *ControlPlane) AuditEvents(from int64, user, agent string) ([]AuditEvent, int64, error) {
	return ReadAuditLog(c.AuditLog, from, user, agent)
}

// ReadAuditLog is AuditEvents of any API server's JSON audit log.
func ReadAuditLog(file string, from int64, user, agent string) ([]AuditEvent, int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, from, err
	}
	// Only whole lines: the API server may be writing the last one.
	end := int64(bytes.LastIndexByte(b, '\n') + 1)
	if from > end {
		return nil, from, fmt.Errorf("audit log %s ends at %d, before offset %d: it was rotated (--audit-log-maxsize)", file, end, from)
	}
	var out []AuditEvent
	for _, line := range bytes.Split(b[from:end], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, from, fmt.Errorf("audit log: %w", err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil || !strings.HasPrefix(e.UserAgent, agent) || e.User.Username != user {
			continue
		}
		out = append(out, e)
	}
	return out, end, nil
}

// AuditLogEnd is where the audit log's last whole line ends: where the
// requests made from now on begin (an offset for ReadAuditLog).
func AuditLogEnd(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("the audit log: %w", err)
	}
	from := max(st.Size()-1<<20, 0)
	tail := make([]byte, st.Size()-from)
	if _, err := f.ReadAt(tail, from); err != nil && err != io.EOF {
		return 0, fmt.Errorf("reading the audit log's end: %w", err)
	}
	return from + int64(bytes.LastIndexByte(tail, '\n')+1), nil
}

// GrantedRules returns what the ClusterRole named role, in the manifest
// file, grants, as "verb group/resource[/subresource]" (the form
// AuditEvent.Request gives), followed by " name" for each of a rule's
// resourceNames.
func GrantedRules(file, role string) (map[string]bool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if r.Name != role {
			continue
		}
		for _, rule := range r.Rules {
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						for _, name := range names {
							out[strings.TrimSuffix(v+" "+g+"/"+res+" "+name, " ")] = true
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s grants %s nothing", file, role)
	}
	return out, nil
}

// PrivilegeUse is how an identity used its privileges: the requests RBAC
// refused it, the rules it was granted and never used, and the requests it
// made that no rule of the manifests grants (a grant the manifests do not
// show, or an audit filter that is wrong). Each "verb group/resource".
type PrivilegeUse struct {
	Refused, Unused, Ungranted []string
}

// Least tells whether the identity used exactly what it was granted.
func (u PrivilegeUse) Least() bool {
	return len(u.Refused)+len(u.Unused)+len(u.Ungranted) == 0
}

func (u PrivilegeUse) String() string {
	return fmt.Sprintf("refused %v, unused %v, done without a rule %v", u.Refused, u.Unused, u.Ungranted)
}

// PrivilegeUse compares the requests that user made through agent (see
// AuditEvents) with what the ClusterRoles and Roles named role in files
// grant.
func (c *ControlPlane) PrivilegeUse(files []string, role, user, agent string) (PrivilegeUse, error) {
	return PrivilegeUseIn(c.AuditLog, 0, files, role, user, agent)
}

// PrivilegeUseIn is PrivilegeUse of any API server's JSON audit log, from
// the offset from on (see AuditLogEnd).
func PrivilegeUseIn(auditLog string, from int64, files []string, role, user, agent string) (PrivilegeUse, error) {
	roles := map[string]string{}
	for _, f := range files {
		roles[f] = role
	}
	granted, err := GrantedRulesOf(roles)
	if err != nil {
		return PrivilegeUse{}, err
	}
	return PrivilegeUseOf(auditLog, from, granted, user, agent)
}

// GrantedRulesOf is what the roles grant together, by file the role's name
// (the ClusterRoles that an aggregated one gathers, say).
func GrantedRulesOf(roles map[string]string) (map[string]bool, error) {
	granted := map[string]bool{}
	for f, role := range roles {
		rules, err := GrantedRules(f, role)
		if err != nil {
			return nil, err
		}
		maps.Copy(granted, rules)
	}
	return granted, nil
}

// PrivilegeUseOf compares the requests that user made through agent with
// the rules granted (see GrantedRules), in any API server's JSON audit log,
// from the offset from on.
func PrivilegeUseOf(auditLog string, from int64, granted map[string]bool, user, agent string) (PrivilegeUse, error) {
	events, _, err := ReadAuditLog(auditLog, from, user, agent)
	if err != nil {
		return PrivilegeUse{}, err
	}
	var u PrivilegeUse
	used := map[string]bool{}
	for _, e := range events {
		r := e.Request()
		if named := r + " " + e.ObjectRef.Name; granted[named] {
			r = named
		}
		switch {
		case e.Forbidden():
			u.Refused = append(u.Refused, r)
		case !granted[r] && !used[r]:
			u.Ungranted = append(u.Ungranted, r)
			fallthrough
		default:
			used[r] = true
		}
	}
	for r := range granted {
		if !used[r] {
			u.Unused = append(u.Unused, r)
		}
	}
	sort.Strings(u.Unused)
	return u, nil
}
