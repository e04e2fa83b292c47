// Package dns is the sandbox's cluster DNS: it answers A queries for Services
// (<svc>.<ns>.svc.cluster.local), the pods behind headless Services
// (<hostname>.<svc>.<ns>.svc.cluster.local, as StatefulSet pods are addressed) and pod
// addresses (<a-b-c-d>.<ns>.pod.cluster.local). It listens on the bridge gateway, where every
// pod's resolv.conf points. It forwards nothing: names outside cluster.local are refused, so
// no query leaves the machine.
package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Domain is the cluster domain.
const Domain = "cluster.local"

// Response codes.
const (
	rcodeOK       = 0
	rcodeFormErr  = 1
	rcodeNXDomain = 3
	rcodeNotImp   = 4
	rcodeRefused  = 5
)

const (
	typeA  = 1
	ttl    = 5
	header = 12
)

// Records looks up what the cluster knows.
type Records interface {
	// Service returns the Service ns/name, or a NotFound error.
	Service(ns, name string) (*corev1.Service, error)
	// EndpointSlices returns the EndpointSlices of Service ns/name.
	EndpointSlices(ns, name string) ([]*discoveryv1.EndpointSlice, error)
}

// Resolve answers an A query for name: the addresses and a response code.
func Resolve(r Records, name string) ([]netip.Addr, int) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name != Domain && !strings.HasSuffix(name, "."+Domain) {
		return nil, rcodeRefused
	}
	rest := strings.TrimSuffix(strings.TrimSuffix(name, Domain), ".")
	labels := strings.Split(rest, ".")
	n := len(labels)
	switch {
	case n == 3 && labels[2] == "pod":
		ip, err := netip.ParseAddr(strings.ReplaceAll(labels[0], "-", "."))
		if err != nil || !ip.Is4() {
			return nil, rcodeNXDomain
		}
		return []netip.Addr{ip}, rcodeOK
	case (n == 3 || n == 4) && labels[n-1] == "svc":
		ns, svcName := labels[n-2], labels[n-3]
		svc, err := r.Service(ns, svcName)
		if err != nil {
			return nil, rcodeNXDomain
		}
		headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
		if n == 3 && !headless {
			ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
			if err != nil {
				return nil, rcodeOK
			}
			return []netip.Addr{ip}, rcodeOK
		}
		if !headless {
			return nil, rcodeNXDomain
		}
		slices, err := r.EndpointSlices(ns, svcName)
		if err != nil {
			return nil, rcodeNXDomain
		}
		var out []netip.Addr
		for _, s := range slices {
			if s.AddressType != discoveryv1.AddressTypeIPv4 {
				continue
			}
			for _, ep := range s.Endpoints {
				ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready || svc.Spec.PublishNotReadyAddresses
				if n == 4 && (ep.Hostname == nil || *ep.Hostname != labels[0]) {
					continue
				}
				if n == 3 && !ready {
					continue
				}
				for _, a := range ep.Addresses {
					if ip, err := netip.ParseAddr(a); err == nil {
						out = append(out, ip)
					}
				}
			}
		}
		if n == 4 && len(out) == 0 {
			return nil, rcodeNXDomain
		}
		return out, rcodeOK
	}
	return nil, rcodeNXDomain
}

// query is a parsed DNS question.
type query struct {
	id     uint16
	flags  uint16
	name   string
	qtype  uint16
	qclass uint16
	end    int // offset after the question
}

var errMalformed = errors.New("malformed DNS message")

func parse(b []byte) (query, error) {
	if len(b) < header {
		return query{}, errMalformed
	}
	q := query{id: binary.BigEndian.Uint16(b[0:]), flags: binary.BigEndian.Uint16(b[2:])}
	if binary.BigEndian.Uint16(b[4:]) != 1 {
		return q, errMalformed
	}
	var labels []string
	i := header
	for {
		if i >= len(b) {
			return q, errMalformed
		}
		l := int(b[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(b) {
			return q, errMalformed
		}
		labels = append(labels, string(b[i:i+l]))
		i += l
	}
	if i+4 > len(b) {
		return q, errMalformed
	}
	q.name = strings.Join(labels, ".")
	q.qtype = binary.BigEndian.Uint16(b[i:])
	q.qclass = binary.BigEndian.Uint16(b[i+2:])
	q.end = i + 4
	return q, nil
}

// respond builds the answer to msg.
func respond(r Records, msg []byte) []byte {
	q, err := parse(msg)
	if err != nil {
		if len(msg) < header {
			return nil
		}
		return reply(msg[:header], query{id: binary.BigEndian.Uint16(msg), flags: binary.BigEndian.Uint16(msg[2:])}, rcodeFormErr, nil, false)
	}
	if q.flags&0x7800 != 0 { // only standard queries
		return reply(msg[:q.end], q, rcodeNotImp, nil, true)
	}
	ips, rcode := Resolve(r, q.name)
	if q.qtype != typeA || q.qclass != 1 {
		ips = nil // the name exists (or not) all the same; there are only A records
	}
	return reply(msg[:q.end], q, rcode, ips, true)
}

func reply(question []byte, q query, rcode int, ips []netip.Addr, withQuestion bool) []byte {
	out := make([]byte, header, header+len(question)+16*len(ips))
	binary.BigEndian.PutUint16(out[0:], q.id)
	flags := uint16(0x8000) | q.flags&0x0100 // QR, copy RD
	if rcode == rcodeOK || rcode == rcodeNXDomain {
		flags |= 0x0400 // authoritative
	}
	flags |= uint16(rcode)
	binary.BigEndian.PutUint16(out[2:], flags)
	if withQuestion {
		binary.BigEndian.PutUint16(out[4:], 1)
		out = append(out, question[header:]...)
	}
	binary.BigEndian.PutUint16(out[6:], uint16(len(ips)))
	for _, ip := range ips {
		a := ip.As4()
		out = append(out, 0xc0, header) // pointer to the question's name
		out = binary.BigEndian.AppendUint16(out, typeA)
		out = binary.BigEndian.AppendUint16(out, 1)
		out = binary.BigEndian.AppendUint32(out, ttl)
		out = binary.BigEndian.AppendUint16(out, 4)
		out = append(out, a[:]...)
	}
	return out
}

// informerRecords serves Records from informer caches.
type informerRecords struct {
	factory informers.SharedInformerFactory
}

func (r informerRecords) Service(ns, name string) (*corev1.Service, error) {
	return r.factory.Core().V1().Services().Lister().Services(ns).Get(name)
}

func (r informerRecords) EndpointSlices(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	return r.factory.Discovery().V1().EndpointSlices().Lister().EndpointSlices(ns).List(sel)
}

// Serve answers DNS on addr (UDP and TCP) until ctx ends.
func Serve(ctx context.Context, client kubernetes.Interface, addr string, log *slog.Logger) error {
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	_ = factory.Core().V1().Services().Informer()
	_ = factory.Discovery().V1().EndpointSlices().Informer()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return errors.New("sync informer for " + typ.String())
		}
	}
	records := informerRecords{factory: factory}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		_ = pc.Close()
		return err
	}
	go func() {
		<-ctx.Done()
		_ = pc.Close()
		_ = l.Close()
	}()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			if out := respond(records, buf[:n]); out != nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			go serveTCP(records, c)
		}
	}()
	log.Info("cluster DNS listening", "addr", addr)
	return nil
}

func serveTCP(r Records, c net.Conn) {
	defer func() { _ = c.Close() }()
	for {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		out := respond(r, msg)
		if out == nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...)); err != nil {
			return
		}
	}
}
