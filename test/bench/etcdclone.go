package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/test/reconciled"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// cloner writes custom resources with their Deployment and Service straight into etcd, as copies of
// a template of the same kind that went through kube-apiserver: kube-apiserver's write path stores
// about 20 objects a second once etcd holds tens of thousands, too slow for 100,000 on two cores,
// while its watch cache takes what is written into etcd as it takes its own writes.
//
// A copy is the template's stored bytes with the template's name and UIDs replaced by the copy's,
// of the same length, so the protobuf of a Deployment or Service stays valid: its labels, selector,
// owner reference and managedFields are what applying the copy would have stored, and what the
// operator's field manager holds of it hashes as the operator's own apply of the copy. The Service
// alone is changed: it keeps no cluster IP or node port, which kube-apiserver never allocated and
// its repair loops would otherwise report, once for each copy; the operator holds neither.
type cloner struct {
	etcd      *clientv3.Client
	templates map[string]*template // by kind
	codec     runtime.Serializer
}

// template is a custom resource stored through kube-apiserver, and what etcd holds of it and of
// its children: the value by key, the Service's already without its allocations.
type template struct {
	name string
	// uids are the custom resource's, its Deployment's and its Service's.
	uids []string
	// desired are the children's apply.AnnotationDesired, a hash of the configuration applied,
	// which differs for each copy.
	desired []string
	// quantities are the template's distinctQuantities, which differ for each copy.
	quantities []string
	values     map[string][]byte
}

func newCloner(c *cluster) (*cloner, error) {
	etcd, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{c.env.ControlPlane.Etcd.URL.String()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, err
	}
	return &cloner{
		etcd:      etcd,
		templates: map[string]*template{},
		codec:     protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme),
	}, nil
}

func (cl *cloner) close() error { return cl.etcd.Close() }

// addTemplate reads from etcd what is stored of obj, stored through kube-apiserver, and of its
// Deployment and Service: every key that ends in its namespace and name.
func (cl *cloner) addTemplate(ctx context.Context, c *cluster, obj client.Object) error {
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return fmt.Errorf("the template: %w", err)
	}
	t := &template{name: obj.GetName(), uids: []string{string(obj.GetUID())}, quantities: distinctQuantities(obj), values: map[string][]byte{}}
	suffix := "/" + obj.GetNamespace() + "/" + obj.GetName()
	keys, err := cl.etcd.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	for _, kv := range keys.Kvs {
		key := string(kv.Key)
		if !strings.HasSuffix(key, suffix) {
			continue
		}
		value, err := cl.etcd.Get(ctx, key)
		if err != nil {
			return err
		}
		t.values[key] = value.Kvs[0].Value
		if strings.Contains(key, "/services/") {
			if t.values[key], err = cl.withoutAllocations(t.values[key]); err != nil {
				return err
			}
		}
	}
	for _, child := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), child); err != nil {
			return fmt.Errorf("the template's children: %w", err)
		}
		t.uids = append(t.uids, string(child.GetUID()))
		t.desired = append(t.desired, child.GetAnnotations()[apply.AnnotationDesired])
	}
	if len(t.values) != 3 {
		return fmt.Errorf("etcd holds %d objects named %s, not a custom resource, its Deployment and its Service", len(t.values), suffix)
	}
	cl.templates[kindOf(obj)] = t
	return nil
}

// store writes obj, of the kind and namespace of a template and a name of the template name's
// length, with its children into etcd. serial makes its UIDs.
func (cl *cloner) store(ctx context.Context, obj client.Object, serial int) error {
	t := cl.templates[kindOf(obj)]
	if t == nil {
		return fmt.Errorf("no template of %s", kindOf(obj))
	}
	if len(obj.GetName()) != len(t.name) {
		return fmt.Errorf("%s: a copy of %s needs a name of %d characters", obj.GetName(), t.name, len(t.name))
	}
	replacements := []string{t.name, obj.GetName()}
	for i, uid := range t.uids {
		replacements = append(replacements, uid, fmt.Sprintf("00000000-0000-4000-800%d-%012x", i, serial))
	}
	obj.SetUID(types.UID(replacements[3]))
	desired, err := desiredHashes(obj)
	if err != nil {
		return err
	}
	for i, hash := range t.desired {
		replacements = append(replacements, hash, desired[i])
	}
	for i, q := range distinctQuantities(obj) {
		if len(q) != len(t.quantities[i]) {
			return fmt.Errorf("%s: a copy of %s needs quantities of %d characters, not %q", obj.GetName(), t.name, len(t.quantities[i]), q)
		}
		replacements = append(replacements, t.quantities[i], q)
	}
	replace := func(b []byte) []byte {
		for i := 0; i < len(replacements); i += 2 {
			b = bytes.ReplaceAll(b, []byte(replacements[i]), []byte(replacements[i+1]))
		}
		return b
	}
	var puts []clientv3.Op
	for key, value := range t.values {
		puts = append(puts, clientv3.OpPut(string(replace([]byte(key))), string(replace(value))))
	}
	_, err = cl.etcd.Txn(ctx).Then(puts...).Commit()
	return err
}

// desiredHashes are the apply.AnnotationDesired of the Deployment and Service the operator applies
// for obj, which has its UID.
func desiredHashes(obj client.Object) ([]string, error) {
	webhooks.DefaultObject(obj)
	deployment, service, _ := reconciled.OperatorWrites(obj, testenv.WelcomeImage, testenv.MemcachedImage)
	if _, err := apply.Holds(nil, deployment); err != nil {
		return nil, err
	}
	if _, err := apply.Holds(nil, service); err != nil {
		return nil, err
	}
	return []string{deployment.Annotations[apply.AnnotationDesired], service.Annotations[apply.AnnotationDesired]}, nil
}

// withoutAllocations is the stored Service without its cluster IP and node ports.
func (cl *cloner) withoutAllocations(stored []byte) ([]byte, error) {
	obj, _, err := cl.codec.Decode(stored, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding a stored Service: %w", err)
	}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("etcd holds a %T where a Service is stored", obj)
	}
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
	}
	var out bytes.Buffer
	if err := cl.codec.Encode(svc, &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// kindOf names obj's Go type, which is its kind's.
func kindOf(obj client.Object) string { return fmt.Sprintf("%T", obj) }
