package scenario

import "github.com/runnerbench/runner/protocol"

// Message is one chat message (the protocol's, so a prompt's messages go
// into a request as they are).
type Message = protocol.Message
