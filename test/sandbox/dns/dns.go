// Package dns is the sandbox's cluster DNS. It serves the records of the Kubernetes DNS
// specification as CoreDNS's kubernetes plugin does (with `pods insecure`), from informer
// caches of Services and EndpointSlices:
//
//   - <svc>.<ns>.svc.cluster.local: A of the ClusterIP, of every ready endpoint of a headless
//     Service, CNAME of an ExternalName Service;
//   - <endpoint>.<svc>.<ns>.svc.cluster.local: A of a ready endpoint whose hostname (a
//     StatefulSet pod's name under its headless Service) or dashed address matches;
//   - _<port>._<proto>.<svc>.<ns>.svc.cluster.local (and <svc>... for all ports): SRV;
//   - <a-b-c-d>.<ns>.pod.cluster.local: A of that address;
//   - <d>.<c>.<b>.<a>.in-addr.arpa: PTR of ClusterIPs and endpoint addresses.
//
// Everything else gets NXDOMAIN at once: nothing is forwarded, so no query leaves the
// machine. It listens on the bridge gateway; the kube-system/kube-dns Service (PublishService)
// points there, and pods' resolv.conf names that Service's ClusterIP, as on a real cluster.
package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Domain is the cluster domain.
const Domain = "cluster.local"

const (
	zone        = Domain + "."
	reverseZone = "in-addr.arpa."
	ttl         = 5
	// udpSize is the largest UDP answer for a query without EDNS0.
	udpSize = 512
	// maxUDPSize caps what an EDNS0 client may ask for.
	maxUDPSize = 4096
)

// Records looks up what the cluster knows.
type Records interface {
	// Service returns the Service ns/name, or a NotFound error.
	Service(ns, name string) (*corev1.Service, error)
	// EndpointSlices returns the EndpointSlices of Service ns/name.
	EndpointSlices(ns, name string) ([]*discoveryv1.EndpointSlice, error)
	// ServicesByIP returns the Services with ClusterIP ip.
	ServicesByIP(ip string) []*corev1.Service
	// EndpointSlicesByIP returns the EndpointSlices with an endpoint at address ip.
	EndpointSlicesByIP(ip string) []*discoveryv1.EndpointSlice
}

// Answer is the outcome of a question.
type Answer struct {
	RCode dnsmessage.RCode
	// Authoritative is set for names in the cluster and reverse zones.
	Authoritative bool
	Answers       []dnsmessage.Resource
	Additionals   []dnsmessage.Resource
}

// name is a fully qualified name in canonical (lower case, trailing dot) form.
func canonical(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

func mustName(s string) dnsmessage.Name { return dnsmessage.MustNewName(s) }

func header(name string, typ dnsmessage.Type) dnsmessage.ResourceHeader {
	return dnsmessage.ResourceHeader{Name: mustName(name), Type: typ, Class: dnsmessage.ClassINET, TTL: ttl}
}

func aRecord(name string, ip netip.Addr) dnsmessage.Resource {
	return dnsmessage.Resource{Header: header(name, dnsmessage.TypeA), Body: &dnsmessage.AResource{A: ip.As4()}}
}

// soa is the zone's SOA record, sent with negative answers so resolvers cache them briefly.
func soa(z string) dnsmessage.Resource {
	return dnsmessage.Resource{Header: header(z, dnsmessage.TypeSOA), Body: &dnsmessage.SOAResource{
		NS: mustName("ns.dns." + zone), MBox: mustName("hostmaster." + zone),
		Serial: uint32(time.Now().Unix()), Refresh: 7200, Retry: 1800, Expire: 86400, MinTTL: ttl,
	}}
}

// Resolve answers one question.
func Resolve(r Records, q dnsmessage.Question) Answer {
	name := canonical(q.Name.String())
	switch {
	case name == zone || strings.HasSuffix(name, "."+zone):
		return resolveCluster(r, name, q.Type)
	case strings.HasSuffix(name, "."+reverseZone):
		return resolveReverse(r, name, q.Type)
	}
	return Answer{RCode: dnsmessage.RCodeNameError}
}

// endpoint is one address a name stands for, with its port (SRV) and its own name.
type endpoint struct {
	ip   netip.Addr
	port uint16
	host string // fully qualified name of the address (SRV target, PTR)
}

func resolveCluster(r Records, name string, qtype dnsmessage.Type) Answer {
	rest := strings.TrimSuffix(strings.TrimSuffix(name, zone), ".")
	var segs []string
	if rest != "" {
		segs = strings.Split(rest, ".")
	}
	n := len(segs)
	nodata := Answer{RCode: dnsmessage.RCodeSuccess, Authoritative: true}
	nxdomain := Answer{RCode: dnsmessage.RCodeNameError, Authoritative: true}
	switch {
	case n == 0:
		if qtype == dnsmessage.TypeSOA {
			nodata.Answers = []dnsmessage.Resource{soa(zone)}
		}
		return nodata
	case n == 1 && (segs[0] == "svc" || segs[0] == "pod"):
		return nodata
	case n == 3 && segs[2] == "pod":
		ip, err := netip.ParseAddr(strings.ReplaceAll(segs[0], "-", "."))
		if err != nil || !ip.Is4() {
			return nxdomain
		}
		if qtype == dnsmessage.TypeA || qtype == dnsmessage.TypeALL {
			nodata.Answers = []dnsmessage.Resource{aRecord(name, ip)}
		}
		return nodata
	case n < 3 || n > 5 || segs[n-1] != "svc":
		return nxdomain
	}
	ns, svcName := segs[n-2], segs[n-3]
	var host, port, proto string
	switch n {
	case 4:
		host = segs[0]
	case 5:
		if !strings.HasPrefix(segs[0], "_") || !strings.HasPrefix(segs[1], "_") {
			return nxdomain
		}
		port, proto = segs[0][1:], segs[1][1:]
	}
	svc, err := r.Service(ns, svcName)
	if err != nil {
		return nxdomain
	}
	svcFQDN := svcName + "." + ns + ".svc." + zone
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if n != 3 {
			return nxdomain
		}
		target := canonical(svc.Spec.ExternalName)
		if _, err := dnsmessage.NewName(target); err != nil || qtype == dnsmessage.TypeSOA {
			return nodata
		}
		nodata.Answers = []dnsmessage.Resource{{Header: header(name, dnsmessage.TypeCNAME),
			Body: &dnsmessage.CNAMEResource{CNAME: mustName(target)}}}
		return nodata
	}
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == ""
	var eps []endpoint
	if host != "" || headless {
		eps = readyEndpoints(r, svc, svcFQDN, host, port, proto)
	} else if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && ip.Is4() {
		for _, p := range svc.Spec.Ports {
			if matches(port, p.Name) && matches(proto, string(p.Protocol)) {
				eps = append(eps, endpoint{ip: ip, port: uint16(p.Port), host: svcFQDN})
			}
		}
		if port == "" && proto == "" && len(eps) == 0 {
			eps = []endpoint{{ip: ip, host: svcFQDN}} // a Service without ports still has its A record
		}
	}
	if len(eps) == 0 {
		return nxdomain
	}
	switch qtype {
	case dnsmessage.TypeA, dnsmessage.TypeALL:
		seen := map[netip.Addr]bool{}
		for _, e := range eps {
			if !seen[e.ip] {
				seen[e.ip] = true
				nodata.Answers = append(nodata.Answers, aRecord(name, e.ip))
			}
		}
	case dnsmessage.TypeSRV:
		seen := map[string]bool{}
		for _, e := range eps {
			if e.port == 0 {
				continue
			}
			key := e.host + ":" + strconv.Itoa(int(e.port))
			if seen[key] {
				continue
			}
			seen[key] = true
			nodata.Answers = append(nodata.Answers, dnsmessage.Resource{Header: header(name, dnsmessage.TypeSRV),
				Body: &dnsmessage.SRVResource{Priority: 0, Weight: uint16(100 / len(eps)), Port: e.port, Target: mustName(e.host)}})
			if !seen[e.host] {
				seen[e.host] = true
				nodata.Additionals = append(nodata.Additionals, aRecord(e.host, e.ip))
			}
		}
	}
	return nodata
}

// matches compares a port name or protocol of a name (empty: any) to an object's.
func matches(want, have string) bool {
	return want == "" || want == "*" || strings.EqualFold(want, have)
}

// endpointHostname is how an endpoint is named under its Service: its hostname, or its
// address with dashes.
func endpointHostname(ep discoveryv1.Endpoint, addr string) string {
	if ep.Hostname != nil && *ep.Hostname != "" {
		return strings.ToLower(*ep.Hostname)
	}
	return strings.NewReplacer(".", "-", ":", "-").Replace(addr)
}

// ready reports whether an endpoint serves DNS: ready (or, with publishNotReadyAddresses,
// marked ready by the EndpointSlice controller anyway).
func ready(ep discoveryv1.Endpoint) bool { return ep.Conditions.Ready == nil || *ep.Conditions.Ready }

// readyEndpoints lists the ready endpoint addresses of svc matching the name's endpoint
// label (host), port name and protocol (empty: any).
func readyEndpoints(r Records, svc *corev1.Service, svcFQDN, host, port, proto string) []endpoint {
	slices, err := r.EndpointSlices(svc.Namespace, svc.Name)
	if err != nil {
		return nil
	}
	var out []endpoint
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		var ports []uint16
		for _, p := range s.Ports {
			name, protocol := "", string(corev1.ProtocolTCP)
			if p.Name != nil {
				name = *p.Name
			}
			if p.Protocol != nil {
				protocol = string(*p.Protocol)
			}
			if p.Port != nil && matches(port, name) && matches(proto, protocol) {
				ports = append(ports, uint16(*p.Port))
			}
		}
		if len(ports) == 0 {
			if port != "" || proto != "" {
				continue
			}
			ports = []uint16{0}
		}
		for _, ep := range s.Endpoints {
			if !ready(ep) {
				continue
			}
			for _, a := range ep.Addresses {
				ip, err := netip.ParseAddr(a)
				hn := endpointHostname(ep, a)
				if err != nil || (host != "" && host != hn) {
					continue
				}
				for _, p := range ports {
					out = append(out, endpoint{ip: ip, port: p, host: hn + "." + svcFQDN})
				}
			}
		}
	}
	return out
}

func resolveReverse(r Records, name string, qtype dnsmessage.Type) Answer {
	nxdomain := Answer{RCode: dnsmessage.RCodeNameError, Authoritative: true}
	octets := strings.Split(strings.TrimSuffix(name, "."+reverseZone), ".")
	if len(octets) != 4 {
		return nxdomain
	}
	for i, j := 0, 3; i < j; i, j = i+1, j-1 {
		octets[i], octets[j] = octets[j], octets[i]
	}
	ip, err := netip.ParseAddr(strings.Join(octets, "."))
	if err != nil || !ip.Is4() {
		return nxdomain
	}
	var names []string
	for _, svc := range r.ServicesByIP(ip.String()) {
		names = append(names, svc.Name+"."+svc.Namespace+".svc."+zone)
	}
	for _, s := range r.EndpointSlicesByIP(ip.String()) {
		svcName := s.Labels[discoveryv1.LabelServiceName]
		if svcName == "" {
			continue
		}
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				if a == ip.String() && ready(ep) {
					names = append(names, endpointHostname(ep, a)+"."+svcName+"."+s.Namespace+".svc."+zone)
				}
			}
		}
	}
	if len(names) == 0 {
		return nxdomain
	}
	ans := Answer{RCode: dnsmessage.RCodeSuccess, Authoritative: true}
	if qtype == dnsmessage.TypePTR || qtype == dnsmessage.TypeALL {
		seen := map[string]bool{}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				ans.Answers = append(ans.Answers, dnsmessage.Resource{Header: header(name, dnsmessage.TypePTR),
					Body: &dnsmessage.PTRResource{PTR: mustName(n)}})
			}
		}
	}
	return ans
}

// respond builds the answer to msg, received over UDP or TCP; nil means no answer (not even
// a header to reply to).
func respond(r Records, msg []byte, udp bool) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil
	}
	if h.Response {
		return nil
	}
	reply := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired}
	questions, err := p.AllQuestions()
	if err != nil || len(questions) != 1 {
		reply.RCode = dnsmessage.RCodeFormatError
		return pack(reply, nil, Answer{}, nil, udpSize)
	}
	q := questions[0]
	// EDNS0: answer with an OPT record and honour the client's UDP size.
	limit := udpSize
	var opt *dnsmessage.Resource
	if err := p.SkipAllAnswers(); err == nil {
		if err := p.SkipAllAuthorities(); err == nil {
			for {
				rh, err := p.AdditionalHeader()
				if err != nil {
					break
				}
				if rh.Type == dnsmessage.TypeOPT {
					size := int(rh.Class)
					limit = max(udpSize, min(size, maxUDPSize))
					var o dnsmessage.ResourceHeader
					_ = o.SetEDNS0(limit, dnsmessage.RCodeSuccess, false)
					opt = &dnsmessage.Resource{Header: o, Body: &dnsmessage.OPTResource{}}
				}
				if err := p.SkipAdditional(); err != nil {
					break
				}
			}
		}
	}
	if !udp {
		limit = 65535
	}
	if h.OpCode != 0 || (q.Class != dnsmessage.ClassINET && q.Class != dnsmessage.ClassANY) {
		reply.RCode = dnsmessage.RCodeNotImplemented
		return pack(reply, &q, Answer{}, opt, limit)
	}
	ans := Resolve(r, q)
	reply.RCode = ans.RCode
	reply.Authoritative = ans.Authoritative
	if ans.Authoritative && len(ans.Answers) == 0 {
		z := zone
		if strings.HasSuffix(canonical(q.Name.String()), reverseZone) {
			z = reverseZone
		}
		return pack(reply, &q, ans, opt, limit, soa(z))
	}
	return pack(reply, &q, ans, opt, limit)
}

// pack serializes a reply; when it exceeds limit, it sends the header and question only,
// with TC set, so the client asks again over TCP.
func pack(h dnsmessage.Header, q *dnsmessage.Question, ans Answer, opt *dnsmessage.Resource, limit int, authority ...dnsmessage.Resource) []byte {
	build := func(h dnsmessage.Header, full bool) ([]byte, error) {
		b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
		b.EnableCompression()
		if err := b.StartQuestions(); err != nil {
			return nil, err
		}
		if q != nil {
			if err := b.Question(*q); err != nil {
				return nil, err
			}
		}
		if full {
			if err := b.StartAnswers(); err != nil {
				return nil, err
			}
			for _, rr := range ans.Answers {
				if err := addResource(&b, rr); err != nil {
					return nil, err
				}
			}
			if err := b.StartAuthorities(); err != nil {
				return nil, err
			}
			for _, rr := range authority {
				if err := addResource(&b, rr); err != nil {
					return nil, err
				}
			}
		}
		if err := b.StartAdditionals(); err != nil {
			return nil, err
		}
		if full {
			for _, rr := range ans.Additionals {
				if err := addResource(&b, rr); err != nil {
					return nil, err
				}
			}
		}
		if opt != nil {
			if err := b.OPTResource(opt.Header, *opt.Body.(*dnsmessage.OPTResource)); err != nil {
				return nil, err
			}
		}
		return b.Finish()
	}
	out, err := build(h, true)
	if err == nil && len(out) <= limit {
		return out
	}
	if err != nil {
		h.RCode = dnsmessage.RCodeServerFailure
	} else {
		h.Truncated = true
	}
	out, _ = build(h, false)
	return out
}

func addResource(b *dnsmessage.Builder, rr dnsmessage.Resource) error {
	switch body := rr.Body.(type) {
	case *dnsmessage.AResource:
		return b.AResource(rr.Header, *body)
	case *dnsmessage.SRVResource:
		return b.SRVResource(rr.Header, *body)
	case *dnsmessage.PTRResource:
		return b.PTRResource(rr.Header, *body)
	case *dnsmessage.CNAMEResource:
		return b.CNAMEResource(rr.Header, *body)
	case *dnsmessage.SOAResource:
		return b.SOAResource(rr.Header, *body)
	}
	return errors.New("unsupported resource " + rr.Header.Type.String())
}

// informerRecords serves Records from informer caches.
type informerRecords struct {
	services cache.Indexer
	slices   cache.Indexer
	factory  informers.SharedInformerFactory
}

const byIP = "ip"

func (r informerRecords) Service(ns, name string) (*corev1.Service, error) {
	return r.factory.Core().V1().Services().Lister().Services(ns).Get(name)
}

func (r informerRecords) EndpointSlices(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	return r.factory.Discovery().V1().EndpointSlices().Lister().EndpointSlices(ns).List(sel)
}

func (r informerRecords) ServicesByIP(ip string) []*corev1.Service {
	objs, _ := r.services.ByIndex(byIP, ip)
	out := make([]*corev1.Service, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Service))
	}
	return out
}

func (r informerRecords) EndpointSlicesByIP(ip string) []*discoveryv1.EndpointSlice {
	objs, _ := r.slices.ByIndex(byIP, ip)
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*discoveryv1.EndpointSlice))
	}
	return out
}

// Serve answers DNS on addr (UDP and TCP) until ctx ends.
func Serve(ctx context.Context, client kubernetes.Interface, addr string, log *slog.Logger) error {
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	svcInformer := factory.Core().V1().Services().Informer()
	sliceInformer := factory.Discovery().V1().EndpointSlices().Informer()
	err := errors.Join(
		svcInformer.AddIndexers(cache.Indexers{byIP: func(obj any) ([]string, error) {
			svc, ok := obj.(*corev1.Service)
			if !ok {
				return nil, nil
			}
			return svc.Spec.ClusterIPs, nil
		}}),
		sliceInformer.AddIndexers(cache.Indexers{byIP: func(obj any) ([]string, error) {
			s, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok {
				return nil, nil
			}
			var ips []string
			for _, ep := range s.Endpoints {
				ips = append(ips, ep.Addresses...)
			}
			return ips, nil
		}}),
	)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return errors.New("sync informer for " + typ.String())
		}
	}
	records := informerRecords{services: svcInformer.GetIndexer(), slices: sliceInformer.GetIndexer(), factory: factory}
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
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			if out := respond(records, buf[:n], true); out != nil {
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
		out := respond(r, msg, false)
		if out == nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...)); err != nil {
			return
		}
	}
}
