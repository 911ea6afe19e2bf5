package apply

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The drift that server-side apply alone cannot put back: entries of a list that another field
// manager added under keys the operator does not apply.

// portKey is how the Service API keys spec.ports: port and protocol.
type portKey struct {
	port     int32
	protocol corev1.Protocol
}

// ForeignServicePorts returns the indexes, highest first, of the live Service's ports whose port
// and protocol the desired Service does not have. Someone who edits a port number by hand
// creates such an entry under another field manager; server-side apply re-adds the operator's
// port but cannot remove the foreign one, and the two then clash by name.
func ForeignServicePorts(live *corev1.Service, desired *corev1ac.ServiceApplyConfiguration) []int {
	wanted := map[portKey]bool{}
	if desired.Spec != nil {
		for _, p := range desired.Spec.Ports {
			wanted[portKey{ptr.Deref(p.Port, 0), ptr.Deref(p.Protocol, corev1.ProtocolTCP)}] = true
		}
	}
	var foreign []int
	for i := len(live.Spec.Ports) - 1; i >= 0; i-- {
		p := live.Spec.Ports[i]
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		if !wanted[portKey{p.Port, protocol}] {
			foreign = append(foreign, i)
		}
	}
	return foreign
}

// ReplaceForeignServicePorts sets the ports of live, the custom resource's own Service as it was
// read, to the desired ports when it has any that ForeignServicePorts names. Live ports the
// desired Service keeps are kept as they are, with the node ports allocated to them; the others
// come from desired. One JSON patch does it, and holds only if the Service is unchanged since it
// was read, so the Service is never left without ports and no other object is ever patched. The
// server-side apply that follows takes ownership of the ports again. A nil live (no Service yet)
// is not an error: that apply creates it.
//
// A live Service the cache keeps without its ports (AnnotationMorePorts) is read again with
// reader, past the cache. opts go with the patch: client.DryRunAll tries it. It reports whether
// there were ports to replace.
func ReplaceForeignServicePorts(ctx context.Context, c client.Client, reader client.Reader, live *corev1.Service, desired *corev1ac.ServiceApplyConfiguration,
	opts ...client.PatchOption,
) (bool, error) {
	if live == nil {
		return false, nil
	}
	if live.Annotations[AnnotationMorePorts] != "" {
		read := &corev1.Service{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(live), read); err != nil {
			return false, fmt.Errorf("reading the ports of the Service %s: %w", client.ObjectKeyFromObject(live), client.IgnoreNotFound(err))
		}
		live = read
	} else {
		// The patch's reply is written into the object patched, which is the caller's.
		live = live.DeepCopy()
	}
	if len(ForeignServicePorts(live, desired)) == 0 {
		return false, nil
	}
	ports, err := keptOrDesiredPorts(live, desired)
	if err != nil {
		return true, err
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.ResourceVersion},
		{"op": "replace", "path": "/spec/ports", "value": ports},
	})
	if err != nil {
		return true, err
	}
	opts = append([]client.PatchOption{client.FieldOwner(FieldManager)}, opts...)
	if err := c.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch), opts...); err != nil && !apierrors.IsNotFound(err) {
		return true, fmt.Errorf("replacing the ports of the Service %s: %w", client.ObjectKeyFromObject(live), err)
	}
	return true, nil
}

// keptOrDesiredPorts returns the desired ports in order, each the live port of the same port and
// protocol when there is one.
func keptOrDesiredPorts(live *corev1.Service, desired *corev1ac.ServiceApplyConfiguration) ([]corev1.ServicePort, error) {
	byKey := make(map[portKey]corev1.ServicePort, len(live.Spec.Ports))
	for _, p := range live.Spec.Ports {
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		byKey[portKey{p.Port, protocol}] = p
	}
	var ports []corev1.ServicePort
	if desired.Spec == nil {
		return ports, nil
	}
	for _, d := range desired.Spec.Ports {
		if p, ok := byKey[portKey{ptr.Deref(d.Port, 0), ptr.Deref(d.Protocol, corev1.ProtocolTCP)}]; ok {
			ports = append(ports, p)
			continue
		}
		data, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		var p corev1.ServicePort
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	return ports, nil
}
