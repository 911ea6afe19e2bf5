package operator

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// caCertKey is the key of the CA in cert-controller's Secret; it injects the key's value, as it
// is, into every caBundle.
const caCertKey = "ca.crt"

// rolloverCheckInterval is how often, while ca.crt holds a previous CA, a replica checks whether
// every replica serves a certificate of the new one. The kubelet updates a mounted Secret within
// about a minute.
const rolloverCheckInterval = 5 * time.Second

// replicaDialTimeout bounds the TLS handshake with one replica.
const replicaDialTimeout = 5 * time.Second

// caRollover replaces the self-signed CA without a window in which the API server does not trust
// the certificate a replica serves.
//
// cert-controller replaces the CA when it is within its lookahead (90 days) of expiry or when
// the Secret's CA and key do not validate; it then writes the new CA and a serving certificate
// of it in one Update, and injects ca.crt, the new CA alone, into the caBundles afterwards. The
// replicas go on serving the old certificate until the kubelet updates their mounted Secret (its
// sync period, a minute by default, configurable and longer on a busy node) and certwatcher
// reloads it: meanwhile every admission call to them fails closed. cert-controller offers no
// option for this, but it writes with the client of the manager it is given, so it is given
// one whose Updates go through rolloverClient:
//
//   - The Secret: a CA in ca.crt that some caBundle lacks is a new CA; the CAs the caBundles hold
//     now follow it in ca.crt (cert-controller signs with the first), and so stay trusted. A
//     serving certificate that some caBundle does not verify is held back: the Secret keeps the
//     one it has, and cert-controller, finding it signed by another CA, issues it again on its
//     next reconcile, after it has injected the new ca.crt. No replica can load a certificate
//     the API server does not trust.
//   - A webhook configuration: its caBundles become the ca.crt the Secret holds now, read past
//     the cache, rather than the one in cert-controller's cache, so that a replica that has not
//     seen the new Secret yet cannot put the old bundle back.
//
// The previous CAs leave ca.crt, and with it the caBundles, only once every replica serves a
// certificate of the new CA. Reconcile checks it for real by dialing each: a fixed overlap would
// have to outlast a kubelet's delay, which nothing bounds.
type caRollover struct {
	opts   CertOptions
	secret types.NamespacedName
	// api reads past the cache; writer drops the previous CAs.
	api    client.Reader
	writer client.Writer
	// checks asks Reconcile to look at the Secret.
	checks chan event.GenericEvent
}

// addCARollover adds to mgr, on every replica, the controller that drops the previous CAs once
// every replica serves a certificate of the new one.
func addCARollover(mgr ctrl.Manager, c CertOptions, key types.NamespacedName) (*caRollover, error) {
	r := &caRollover{opts: c, secret: key, api: mgr.GetAPIReader(), writer: mgr.GetClient(), checks: make(chan event.GenericEvent, 1)}
	// A rollover may have begun before this replica started.
	r.check()
	err := ctrl.NewControllerManagedBy(mgr).
		Named("ca-rollover").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		WatchesRawSource(source.Channel(r.checks, &handler.EnqueueRequestForObject{})).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("setting up the CA rollover: %w", err)
	}
	return r, nil
}

// check asks Reconcile to look at the Secret, unless it is asked already.
func (r *caRollover) check() {
	select {
	case r.checks <- event.GenericEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.secret.Namespace, Name: r.secret.Name}}}:
	default:
	}
}

// client is c with the Updates of cert-controller going through the rollover.
func (r *caRollover) client(c client.Client) client.Client {
	return rolloverClient{Client: c, rollover: r}
}

// rolloverClient is the client cert-controller writes the Secret and the caBundles with.
type rolloverClient struct {
	client.Client
	rollover *caRollover
}

// Update implements client.Writer.
func (c rolloverClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	switch o := obj.(type) {
	case *corev1.Secret:
		if client.ObjectKeyFromObject(o) == c.rollover.secret {
			if err := c.rollover.trustBeforeServing(ctx, o); err != nil {
				return err
			}
		}
	case *unstructured.Unstructured:
		if g := o.GroupVersionKind().Group; g == admissionregistrationv1.GroupName || g == apiextensionsv1.GroupName {
			if err := c.rollover.injectStoredCA(ctx, o); err != nil {
				return err
			}
		}
	}
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	c.rollover.check()
	return nil
}

// trustBeforeServing prepares the Secret cert-controller is about to write: a new CA goes first
// in ca.crt, followed by the CAs the caBundles hold now, and a serving certificate that some
// caBundle does not verify waits.
func (r *caRollover) trustBeforeServing(ctx context.Context, s *corev1.Secret) error {
	webhooks, _, err := readWebhooks(ctx, r.api, r.opts)
	if err != nil {
		return err
	}
	cas := parseCertificates(s.Data[caCertKey])
	if len(cas) == 0 {
		return nil
	}
	newCA := false
	var trusted []*x509.Certificate
	for _, w := range webhooks {
		bundle := parseCertificates(w.clientConfig.CABundle)
		newCA = newCA || !slices.ContainsFunc(bundle, cas[0].Equal)
		trusted = append(trusted, bundle...)
	}
	if newCA {
		s.Data[caCertKey] = encodeCertificates(withPreviousCAs(cas[0], append(cas[1:], trusted...)))
	}
	chain := parseCertificates(s.Data[corev1.TLSCertKey])
	for _, w := range webhooks {
		if err := verifyChain(parseCertificates(w.clientConfig.CABundle), chain, ""); err != nil {
			ctrl.Log.WithName("ca-rollover").Info("the new serving certificate waits until every caBundle trusts its CA",
				"webhook", w.name, "reason", err.Error())
			return r.keepServingCertificate(ctx, s)
		}
	}
	return nil
}

// keepServingCertificate sets the serving certificate and key of s to those the Secret holds now.
func (r *caRollover) keepServingCertificate(ctx context.Context, s *corev1.Secret) error {
	stored := &corev1.Secret{}
	if err := r.api.Get(ctx, r.secret, stored); err != nil {
		return fmt.Errorf("reading the certificate Secret %s: %w", r.secret, err)
	}
	for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if value, ok := stored.Data[key]; ok {
			s.Data[key] = value
		} else {
			delete(s.Data, key)
		}
	}
	return nil
}

// injectStoredCA sets every caBundle of the webhook configuration, or the CRD's conversion
// webhook, u to the ca.crt the Secret holds now.
func (r *caRollover) injectStoredCA(ctx context.Context, u *unstructured.Unstructured) error {
	stored := &corev1.Secret{}
	if err := r.api.Get(ctx, r.secret, stored); err != nil {
		return fmt.Errorf("reading the certificate Secret %s: %w", r.secret, err)
	}
	ca := stored.Data[caCertKey]
	if len(parseCertificates(ca)) == 0 {
		return fmt.Errorf("the certificate Secret %s holds no CA to inject", r.secret)
	}
	bundle := base64.StdEncoding.EncodeToString(ca)
	if u.GroupVersionKind().Group == apiextensionsv1.GroupName {
		switch _, found, err := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig"); {
		case err != nil:
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		case !found:
			return fmt.Errorf("%s %s has no conversion webhook", u.GetKind(), u.GetName())
		}
		return unstructured.SetNestedField(u.Object, bundle, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	}
	webhooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	for i, w := range webhooks {
		hook, ok := w.(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: webhook %d is not an object", u.GetKind(), u.GetName(), i)
		}
		if err := unstructured.SetNestedField(hook, bundle, "clientConfig", "caBundle"); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return unstructured.SetNestedSlice(u.Object, webhooks, "webhooks")
}

// Reconcile implements reconcile.Reconciler: once every replica serves a certificate of the
// first CA of the Secret's ca.crt, it drops the others, which cert-controller then drops from
// the caBundles.
func (r *caRollover) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	secret := &corev1.Secret{}
	if err := r.api.Get(ctx, r.secret, secret); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cas := parseCertificates(secret.Data[caCertKey])
	if len(cas) < 2 {
		return reconcile.Result{}, nil
	}
	waiting, err := r.replicasNotServing(ctx, cas[0])
	if err != nil {
		return reconcile.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx)
	if len(waiting) > 0 {
		log.Info("the caBundles keep the previous CA until every replica serves a certificate of the new one", "waitingFor", waiting)
		return reconcile.Result{RequeueAfter: rolloverCheckInterval}, nil
	}
	secret.Data[caCertKey] = encodeCertificates(cas[:1])
	if err := r.writer.Update(ctx, secret, client.FieldOwner(EventSource)); err != nil {
		return reconcile.Result{}, fmt.Errorf("dropping the previous CAs from the certificate Secret %s: %w", r.secret, err)
	}
	log.Info("every replica serves a certificate of the new CA: the previous CAs leave the caBundles")
	return reconcile.Result{}, nil
}

// replica is one server the API server may call a webhook on.
type replica struct {
	// address is host:port; serverName is the name the API server verifies the certificate for.
	address, serverName string
}

// replicasNotServing says, of every replica the webhooks are called on, which does not serve a
// certificate of ca, and why; with no replica ready it says so.
func (r *caRollover) replicasNotServing(ctx context.Context, ca *x509.Certificate) ([]string, error) {
	replicas, err := r.replicas(ctx)
	if err != nil {
		return nil, err
	}
	if len(replicas) == 0 {
		return []string{"no ready endpoint of the webhook Service"}, nil
	}
	var waiting []string
	for _, rep := range replicas {
		if err := servesCertificateOf(ctx, rep, ca); err != nil {
			waiting = append(waiting, fmt.Sprintf("%s: %v", rep.address, err))
		}
	}
	return waiting, nil
}

// replicas are the servers the webhooks are called on: the ready (or still serving) endpoints of
// a webhook's Service, on the Service port's target, as kube-apiserver and kube-proxy pick them,
// or the host of its URL.
func (r *caRollover) replicas(ctx context.Context) ([]replica, error) {
	webhooks, _, err := readWebhooks(ctx, r.api, r.opts)
	if err != nil {
		return nil, err
	}
	var replicas []replica
	services := map[admissionregistrationv1.ServiceReference]bool{}
	for _, w := range webhooks {
		switch cc := w.clientConfig; {
		case cc.Service != nil:
			ref := admissionregistrationv1.ServiceReference{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Port: ptr.To(ptr.Deref(cc.Service.Port, 443))}
			if services[ref] {
				continue
			}
			services[ref] = true
			endpoints, err := r.serviceEndpoints(ctx, ref)
			if err != nil {
				return nil, err
			}
			replicas = append(replicas, endpoints...)
		case cc.URL != nil:
			u, err := url.Parse(*cc.URL)
			if err != nil {
				return nil, fmt.Errorf("webhook %s: %w", w.name, err)
			}
			port := u.Port()
			if port == "" {
				port = "443"
			}
			replicas = append(replicas, replica{address: net.JoinHostPort(u.Hostname(), port), serverName: u.Hostname()})
		}
	}
	slices.SortFunc(replicas, func(a, b replica) int {
		return cmp.Or(cmp.Compare(a.address, b.address), cmp.Compare(a.serverName, b.serverName))
	})
	return slices.Compact(replicas), nil
}

// serviceEndpoints are the ready or serving endpoints of the Service ref names, on the target of
// its port, as kube-apiserver resolves a webhook's Service.
func (r *caRollover) serviceEndpoints(ctx context.Context, ref admissionregistrationv1.ServiceReference) ([]replica, error) {
	service := &corev1.Service{}
	if err := r.api.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, service); err != nil {
		return nil, fmt.Errorf("reading the webhook Service %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	i := slices.IndexFunc(service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == *ref.Port })
	if i < 0 {
		return nil, fmt.Errorf("the webhook Service %s/%s has no port %d", ref.Namespace, ref.Name, *ref.Port)
	}
	portName := service.Spec.Ports[i].Name
	endpointSlices := &discoveryv1.EndpointSliceList{}
	if err := r.api.List(ctx, endpointSlices, client.InNamespace(ref.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: ref.Name}); err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of the webhook Service %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	serverName := ref.Name + "." + ref.Namespace + ".svc"
	var replicas []replica
	for _, endpointSlice := range endpointSlices.Items {
		for _, port := range endpointSlice.Ports {
			if ptr.Deref(port.Name, "") != portName || port.Port == nil {
				continue
			}
			for _, e := range endpointSlice.Endpoints {
				if len(e.Addresses) == 0 || !ptr.Deref(e.Conditions.Ready, true) && !ptr.Deref(e.Conditions.Serving, false) {
					continue
				}
				replicas = append(replicas, replica{address: net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*port.Port))), serverName: serverName})
			}
		}
	}
	return replicas, nil
}

// servesCertificateOf verifies the certificate rep presents for its server name against ca alone,
// as the API server would if it trusted ca alone. The handshake itself verifies nothing, so that
// a replica still serving a certificate of another CA does not log a handshake refused by its
// client; nothing is sent over the connection.
func servesCertificateOf(ctx context.Context, rep replica, ca *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(ctx, replicaDialTimeout)
	defer cancel()
	dialer := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, ServerName: rep.serverName, MinVersion: tls.VersionTLS12}}
	conn, err := dialer.DialContext(ctx, "tcp", rep.address)
	if err != nil {
		return err
	}
	chain := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if err := conn.Close(); err != nil {
		return err
	}
	return verifyChain([]*x509.Certificate{ca}, chain, rep.serverName)
}

// withPreviousCAs is ca followed by the others that have not expired, each once.
func withPreviousCAs(ca *x509.Certificate, others []*x509.Certificate) []*x509.Certificate {
	now := time.Now()
	cas := []*x509.Certificate{ca}
	for _, c := range others {
		if now.Before(c.NotAfter) && !slices.ContainsFunc(cas, c.Equal) {
			cas = append(cas, c)
		}
	}
	return cas
}

// verifyChain verifies chain, a serving certificate and its intermediates, against roots, and for
// serverName unless it is empty.
func verifyChain(roots, chain []*x509.Certificate, serverName string) error {
	if len(chain) == 0 {
		return errors.New("no certificate")
	}
	rootPool, intermediates := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range roots {
		rootPool.AddCert(c)
	}
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		DNSName: serverName, Roots: rootPool, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

// parseCertificates are the certificates of PEM data; other blocks, and certificates that do not
// parse, are skipped.
func parseCertificates(data []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return certs
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			certs = append(certs, c)
		}
	}
}

// encodeCertificates is certs in PEM, in order.
func encodeCertificates(certs []*x509.Certificate) []byte {
	var data []byte
	for _, c := range certs {
		data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return data
}
