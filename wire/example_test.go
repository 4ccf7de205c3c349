package wire_test

import (
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/wire"
)

// A control-stream reader decodes frames from its buffer, reads more on io.EOF, and skips
// message types a newer peer may send.
func ExampleParseMessage() {
	var buf []byte
	buf = (&wire.Hello{MinVersion: wire.MinVersion, MaxVersion: wire.MaxVersion, Node: "node-b"}).Append(buf)
	buf = append(buf, 100, 2, 0, 0) // a frame of a type from a later version
	buf = (&wire.Keepalive{Nanos: 42}).Append(buf)

	for len(buf) > 0 {
		m, n, err := wire.ParseMessage(buf, wire.Limits{})
		var unknown *wire.UnknownMessageError
		switch {
		case errors.As(err, &unknown):
			fmt.Println("skipping", unknown.Type)
			buf = buf[unknown.FrameLength:]
			continue
		case err != nil:
			fmt.Println(err) // io.EOF: read more; anything else: send Failure{Code: CodeProtocol}
			return
		}
		switch m := m.(type) {
		case *wire.Hello:
			v, err := wire.Negotiate(wire.Hello{MinVersion: wire.MinVersion, MaxVersion: wire.MaxVersion, Node: "node-a"}, *m)
			fmt.Println("hello from", m.Node, "version", v, err)
		case *wire.Keepalive:
			fmt.Println("keepalive", m.Nanos)
		}
		buf = buf[n:]
	}
	// Output:
	// hello from node-b version 1 <nil>
	// skipping MsgType(100)
	// keepalive 42
}
