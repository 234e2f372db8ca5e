// bursty_send: the sender side of the bursty scenario (bursty.cpp) written in Go, for the
// programs LD_PRELOAD cannot reach. Go's net package makes raw system calls and sets
// TCP_NODELAY (and a 15 s keepalive) itself on every connection, so this is the `bursty send
// --nodelay` app as a Go program would be: the same command line, the same messages on the
// wire, and the same JSON line at the end, read by the C++ `bursty receive`.
//
//	bursty_send send --connect 198.18.0.2:5001 [--size 60KB] [--gap 3s | --gap-min 1s --gap-max 5s]
//	                 [--count 10] [--warmup 3] [--seed 1] [--nodelay]
//
// `--listen A:P` instead of `--connect` accepts one connection and sends on it. Each message
// starts with bursty.cpp's header (magic "BRST", sequence, size, flags, and the CLOCK_MONOTONIC
// time just before the write, which the host's network namespaces share), little-endian: the
// C++ programs' struct on x86-64 and arm64. Warm-up messages go back to back first, flagged
// and not counted by the receiver. Gaps come from mt19937_64 seeded with --seed and turned into
// seconds as libstdc++'s uniform_real_distribution does, so a seed gives the gaps of `bursty
// send`. The JSON line adds the connection's congestion control and the Go version.
//
// Stdlib only; built with CGO_ENABLED=0 (static, raw system calls).
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const (
	magic          = 0x42525354 // "BRST"
	warmupFlag     = 1
	headerSize     = 24 // uint32 magic, sequence, size, flags; int64 send_ns
	clockMonotonic = 1
)

func fail(code int, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "bursty_send: "+format+"\n", args...)
	os.Exit(code)
}

// args follows bench/scenarios/scenario_args.cpp: a role, then `--name value` or `--name`
// (a flag: the next argument is another option or there is none). Every option given must be
// one the role reads.
type args struct {
	role   string
	values map[string]string
	used   map[string]bool
}

func parseArgs(argv []string) *args {
	if len(argv) < 1 || strings.HasPrefix(argv[0], "-") {
		fail(2, "the first argument must be the role")
	}
	a := &args{role: argv[0], values: map[string]string{}, used: map[string]bool{}}
	for i := 1; i < len(argv); i++ {
		if !strings.HasPrefix(argv[i], "--") {
			fail(2, "unexpected argument '%s'", argv[i])
		}
		name := argv[i][2:]
		if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "--") {
			a.values[name] = argv[i+1]
			i++
		} else {
			a.values[name] = ""
		}
	}
	return a
}

func (a *args) flag(name string) bool {
	a.used[name] = true
	_, ok := a.values[name]
	return ok
}

func (a *args) text(name, fallback string) string {
	a.used[name] = true
	value, ok := a.values[name]
	if !ok {
		return fallback
	}
	if value == "" {
		fail(2, "--%s needs a value", name)
	}
	return value
}

func (a *args) count(name string, fallback uint64) uint64 {
	value := a.text(name, "")
	if value == "" {
		return fallback
	}
	parsed, err := strconv.ParseUint(value, 10, 64)
	if err != nil {
		fail(2, "--%s wants a whole number, not '%s'", name, value)
	}
	return parsed
}

type unit struct {
	suffix string
	factor float64
}

var sizeUnits = []unit{{"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"KiB", 1024}, {"MiB", 1024 * 1024},
	{"GiB", 1024 * 1024 * 1024}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}}
var durationUnits = []unit{{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60},
	{"min", 60}, {"h", 3600}}

// scaled reads "12.5MB" as the policy's units do (config/src/units.cpp): digits and dots, then
// spaces, then a unit from the list, which only a size may leave out.
func (a *args) scaled(name string, units []unit, bareAllowed bool) (float64, bool) {
	value := a.text(name, "")
	if value == "" {
		return 0, false
	}
	digits := 0
	for digits < len(value) && (value[digits] >= '0' && value[digits] <= '9' || value[digits] == '.') {
		digits++
	}
	number, err := strconv.ParseFloat(value[:digits], 64)
	if digits == 0 || err != nil || math.IsInf(number, 0) {
		fail(2, "--%s: \"%s\" is not a number with a unit", name, value)
	}
	suffix := strings.TrimLeft(value[digits:], " ")
	if suffix == "" {
		if !bareAllowed {
			fail(2, "--%s: \"%s\" is missing a unit", name, value)
		}
		return number, true
	}
	for _, u := range units {
		if suffix == u.suffix {
			return number * u.factor, true
		}
	}
	fail(2, "--%s: \"%s\": unknown unit \"%s\"", name, value, suffix)
	return 0, false
}

func (a *args) sizeBytes(name string, fallback uint64) uint64 {
	bytes, given := a.scaled(name, sizeUnits, true)
	if !given {
		return fallback
	}
	if bytes >= 1.8e19 {
		fail(2, "--%s is too large", name)
	}
	return uint64(math.Ceil(bytes))
}

func (a *args) seconds(name string, fallback float64) float64 {
	seconds, given := a.scaled(name, durationUnits, false)
	if !given {
		return fallback
	}
	return seconds
}

func (a *args) rejectUnused() {
	for name := range a.values {
		if !a.used[name] {
			fail(2, "unknown option --%s for role '%s'", name, a.role)
		}
	}
}

// mt19937_64 is C++'s std::mt19937_64.
type mt19937_64 struct {
	state [312]uint64
	index int
}

func newMT19937_64(seed uint64) *mt19937_64 {
	m := &mt19937_64{index: 312}
	m.state[0] = seed
	for i := 1; i < 312; i++ {
		previous := m.state[i-1]
		m.state[i] = 6364136223846793005*(previous^(previous>>62)) + uint64(i)
	}
	return m
}

func (m *mt19937_64) next() uint64 {
	const upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF
	if m.index >= 312 {
		for i := 0; i < 312; i++ {
			x := m.state[i]&upper | m.state[(i+1)%312]&lower
			shifted := x >> 1
			if x&1 != 0 {
				shifted ^= 0xB5026F5AA96619E9
			}
			m.state[i] = m.state[(i+156)%312] ^ shifted
		}
		m.index = 0
	}
	y := m.state[m.index]
	m.index++
	y ^= (y >> 29) & 0x5555555555555555
	y ^= (y << 17) & 0x71D67FFFEDA60000
	y ^= (y << 37) & 0xFFF7EEE000000000
	y ^= y >> 43
	return y
}

// uniform is libstdc++'s uniform_real_distribution<double>(low, high) over mt19937_64: one
// draw scaled by 2^-64 (generate_canonical), kept below 1.
func (m *mt19937_64) uniform(low, high float64) float64 {
	canonical := float64(m.next()) / 18446744073709551616.0
	if canonical >= 1 {
		canonical = math.Nextafter(1, 0)
	}
	return canonical*(high-low) + low
}

// monotonicNs is CLOCK_MONOTONIC, the clock `bursty receive` stamps arrivals with (Go's own
// monotonic readings have an unspecified origin).
func monotonicNs() int64 {
	var now syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&now)), 0); errno != 0 {
		fail(1, "clock_gettime: %v", errno)
	}
	return int64(now.Sec)*1e9 + int64(now.Nsec)
}

// endpoint checks "ADDRESS:PORT" as the C++ scenarios do: the address must be an IP address.
func endpoint(text string) string {
	host, port, err := net.SplitHostPort(text)
	if err != nil {
		fail(2, "endpoint '%s' needs ADDRESS:PORT", text)
	}
	if net.ParseIP(host) == nil {
		fail(2, "'%s' is not an IP address", host)
	}
	return net.JoinHostPort(host, port)
}

// readEndpoint: `--listen A:P` accepts one connection, `--connect A:P` opens one.
func readEndpoint(a *args) (listens bool, address string) {
	listen, connect := a.text("listen", ""), a.text("connect", "")
	if listen != "" && connect != "" {
		fail(2, "give --listen or --connect, not both")
	}
	if listen != "" {
		return true, endpoint(listen)
	}
	if connect == "" {
		return false, "198.18.0.2:5001"
	}
	return false, endpoint(connect)
}

func openConnection(listens bool, address string) *net.TCPConn {
	if listens {
		listener, err := net.Listen("tcp", address)
		if err != nil {
			fail(1, "listen on %s: %v", address, err)
		}
		conn, err := listener.Accept()
		if err != nil {
			fail(1, "accept on %s: %v", address, err)
		}
		listener.Close()
		return conn.(*net.TCPConn)
	}
	// The receiver may still be starting in its namespace: retry refused connects for a while.
	for attempt := 0; ; attempt++ {
		conn, err := net.Dial("tcp", address)
		if err == nil {
			return conn.(*net.TCPConn)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || attempt >= 100 {
			fail(1, "connect to %s: %v", address, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// socketState is what the sender reports of its connection: TCP_INFO, TCP_NODELAY and
// TCP_CONGESTION (package syscall has getters for none but the int).
type socketState struct {
	info       syscall.TCPInfo
	nodelay    int
	congestion string
}

func readSocket(conn *net.TCPConn) (socketState, error) {
	var state socketState
	raw, err := conn.SyscallConn()
	if err != nil {
		return state, err
	}
	var failure error
	err = raw.Control(func(fd uintptr) {
		size := uint32(syscall.SizeofTCPInfo)
		if _, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&state.info)), uintptr(unsafe.Pointer(&size)), 0); errno != 0 {
			failure = fmt.Errorf("TCP_INFO: %w", errno)
			return
		}
		if state.nodelay, failure = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY); failure != nil {
			return
		}
		name := make([]byte, 16)
		size = uint32(len(name))
		if _, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_CONGESTION,
			uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(&size)), 0); errno != 0 {
			failure = fmt.Errorf("TCP_CONGESTION: %w", errno)
			return
		}
		state.congestion = strings.TrimRight(string(name[:size]), "\x00")
	})
	if err != nil {
		return state, err
	}
	return state, failure
}

func send(a *args) int {
	listens, address := readEndpoint(a)
	size := a.sizeBytes("size", 60000)
	if size < headerSize {
		size = headerSize
	}
	gap := a.seconds("gap", 3.0)
	gapMin := a.seconds("gap-min", gap)
	gapMax := a.seconds("gap-max", gapMin)
	count := a.count("count", 10)
	warmup := a.count("warmup", 3)
	seed := a.count("seed", 1)
	nodelay := a.flag("nodelay")
	a.rejectUnused()
	if gapMax < gapMin {
		fail(2, "--gap-max is below --gap-min")
	}
	conn := openConnection(listens, address)
	if nodelay {
		conn.SetNoDelay(true) // Go's default already: the flag is accepted for `bursty send`'s command line
	}

	random := newMT19937_64(seed)
	message := make([]byte, size)
	for i := range message {
		message[i] = 'm'
	}
	var idleNs int64
	cwndBefore := []uint32{}
	for i := uint64(0); i < warmup+count; i++ {
		warming := i < warmup
		var flags uint32
		if warming {
			flags = warmupFlag
		} else {
			before := monotonicNs()
			time.Sleep(time.Duration(random.uniform(gapMin, gapMax) * 1e9))
			idleNs += monotonicNs() - before
			state, err := readSocket(conn)
			if err != nil {
				state.info.Snd_cwnd = 0
			}
			cwndBefore = append(cwndBefore, state.info.Snd_cwnd)
		}
		binary.LittleEndian.PutUint32(message[0:], magic)
		binary.LittleEndian.PutUint32(message[4:], uint32(i))
		binary.LittleEndian.PutUint32(message[8:], uint32(size))
		binary.LittleEndian.PutUint32(message[12:], flags)
		binary.LittleEndian.PutUint64(message[16:], uint64(monotonicNs()))
		if _, err := conn.Write(message); err != nil {
			fmt.Fprintf(os.Stderr, "bursty_send: write: %v\n", err)
			return 1
		}
	}
	state, err := readSocket(conn)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bursty_send: getsockopt: %v\n", err)
		return 1
	}
	cwnds := make([]string, len(cwndBefore))
	for i, cwnd := range cwndBefore {
		cwnds[i] = strconv.FormatUint(uint64(cwnd), 10)
	}
	fmt.Printf(`{"scenario":"bursty","role":"send","messages":%d,"warmup":%d,"size":%d,"idle_s":%.3f,`+
		`"rto_ms":%.1f,"nodelay":%t,"congestion":"%s","go":"%s","cwnd_before":[%s]}`+"\n",
		count, warmup, size, float64(idleNs)/1e9, float64(state.info.Rto)/1e3, state.nodelay != 0,
		state.congestion, runtime.Version(), strings.Join(cwnds, ","))
	conn.Close()
	return 0
}

func main() {
	a := parseArgs(os.Args[1:])
	switch a.role {
	case "send":
		os.Exit(send(a))
	case "receive":
		fail(2, "only the sender is in Go: run `bursty receive`")
	default:
		fail(2, "role must be send")
	}
}
