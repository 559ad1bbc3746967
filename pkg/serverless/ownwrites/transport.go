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

package ownwrites

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Transport returns rt recording in r every write of an object that the API
// server accepts through it: a create, an update or a patch of the object
// itself or of its status (not of another subresource, such as scale, whose
// answer is another kind), at the resourceVersion of the API server's
// answer. A create is recorded as in flight while it is
// sent (see Creating). Events are not recorded (they are no owner's
// objects), nor dry runs.
//
// It is a rest.Config's wrapper (rest.Config.Wrap): the clients built from
// that config record what the reconciler writes, and the reconciler needs
// no change. JSON and Kubernetes protobuf bodies (what client-go sends for
// built-in kinds) are read; a write in another encoding goes through
// unrecorded, which costs a reconcile of its event, never a wrong answer.
func (r *Record) Transport(rt http.RoundTripper) http.RoundTripper {
	if r == nil {
		return rt
	}
	return &recording{rt: rt, r: r}
}

type recording struct {
	rt http.RoundTripper
	r  *Record
}

func (t *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	w, ok := writeOf(req)
	if !ok {
		return t.rt.RoundTrip(req)
	}
	var created func(rv string) // a create in flight, of a known object
	if w.create {
		if obj, ok := readRequest(req); ok && obj.Metadata.Name != "" {
			created = t.r.Creating(obj.groupKind(), w.namespace, obj.Metadata.Name)
		}
	}
	resp, err := t.rt.RoundTrip(req)
	var obj object
	ok = err == nil && resp.StatusCode >= 200 && resp.StatusCode <= 299
	if ok {
		obj, ok = readResponse(resp)
	}
	switch {
	case created != nil && ok:
		created(obj.Metadata.ResourceVersion)
	case created != nil:
		created("")
	case ok:
		t.r.Wrote(obj.groupKind(), obj.Metadata.Namespace, obj.Metadata.Name, obj.Metadata.ResourceVersion, obj.Metadata.UID)
	}
	return resp, err
}

// write is what a request writes, from its method and path.
type write struct {
	create    bool
	namespace string
}

// writeOf tells whether req creates, updates or patches an object or its
// status (not another subresource, not an Event, not a dry run), and in
// which namespace.
func writeOf(req *http.Request) (write, bool) {
	var create bool
	switch req.Method {
	case http.MethodPost:
		create = true
	case http.MethodPut, http.MethodPatch:
	default:
		return write{}, false
	}
	if req.URL.Query().Has("dryRun") {
		return write{}, false
	}
	// /api/v1/... or /apis/GROUP/VERSION/..., then
	// [namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]]
	seg := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(seg) >= 2 && seg[0] == "api":
		seg = seg[2:]
	case len(seg) >= 3 && seg[0] == "apis":
		seg = seg[3:]
	default:
		return write{}, false
	}
	var ns string
	if len(seg) >= 3 && seg[0] == "namespaces" {
		ns, seg = seg[1], seg[2:]
	}
	want := 2 // RESOURCE/NAME
	if create {
		want = 1 // RESOURCE
	}
	status := !create && len(seg) == 3 && seg[2] == "status" // RESOURCE/NAME/status
	if (len(seg) != want && !status) || seg[0] == "events" {
		return write{}, false
	}
	return write{create: create, namespace: ns}, true
}

// object is what is read of a written object.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string    `json:"name"`
		Namespace       string    `json:"namespace"`
		ResourceVersion string    `json:"resourceVersion"`
		UID             types.UID `json:"uid"`
	} `json:"metadata"`
}

func (o object) groupKind() schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	return gv.WithKind(o.Kind).GroupKind()
}

// readRequest reads the object that req sends, leaving its body to send.
func readRequest(req *http.Request) (object, bool) {
	decode := decoderFor(req.Header.Get("Content-Type"))
	if req.Body == nil || decode == nil {
		return object{}, false
	}
	var body io.ReadCloser
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return object{}, false
		}
		body = b
	} else {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil { // the server is sent what was read, then fails
			req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
			return object{}, false
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		body = io.NopCloser(bytes.NewReader(b))
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return object{}, false
	}
	o, err := decode(b)
	return o, err == nil && o.Kind != ""
}

// readResponse reads the object that resp returns, leaving its body to read.
func readResponse(resp *http.Response) (object, bool) {
	decode := decoderFor(resp.Header.Get("Content-Type"))
	if resp.Body == nil || decode == nil {
		return object{}, false
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil { // the client reads what came, then the error
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
		return object{}, false
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	o, err := decode(b)
	return o, err == nil && o.Kind != "" && o.Metadata.ResourceVersion != ""
}

// decoderFor returns what reads an object encoded as contentType, or nil.
func decoderFor(contentType string) func([]byte) (object, error) {
	t, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return nil
	case t == runtime.ContentTypeJSON:
		return func(b []byte) (o object, err error) { return o, json.Unmarshal(b, &o) }
	case t == runtime.ContentTypeProtobuf:
		return fromProtobuf
	}
	return nil
}

// protobufPrefix starts every object that the Kubernetes protobuf
// serializer writes, before its runtime.Unknown envelope.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00} // "k8s\x00"

// fromProtobuf reads the type and metadata of an object in Kubernetes'
// protobuf encoding: the envelope's TypeMeta, then the ObjectMeta that is
// field 1 of every object.
func fromProtobuf(b []byte) (object, error) {
	var o object
	raw, ok := bytes.CutPrefix(b, protobufPrefix)
	if !ok {
		return o, errors.New("no protobuf prefix")
	}
	var u runtime.Unknown
	if err := u.Unmarshal(raw); err != nil {
		return o, err
	}
	o.APIVersion, o.Kind = u.APIVersion, u.Kind
	for m := u.Raw; len(m) > 0; {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return o, protowire.ParseError(n)
		}
		m = m[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(m)
			if n < 0 {
				return o, protowire.ParseError(n)
			}
			var meta metav1.ObjectMeta
			if err := meta.Unmarshal(v); err != nil {
				return o, err
			}
			o.Metadata.Name, o.Metadata.Namespace, o.Metadata.ResourceVersion, o.Metadata.UID = meta.Name, meta.Namespace, meta.ResourceVersion, meta.UID
			return o, nil
		}
		n = protowire.ConsumeFieldValue(num, typ, m)
		if n < 0 {
			return o, protowire.ParseError(n)
		}
		m = m[n:]
	}
	return o, errors.New("no metadata")
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
