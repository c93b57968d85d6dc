package logging

import "github.com/rs/zerolog"

func zerologDict(secret string) *zerolog.Event {
	return zerolog.Dict().Str("name", "local").Str("api_key", secret)
}
