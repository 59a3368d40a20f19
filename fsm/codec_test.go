package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	covered := map[CommandType]bool{}
	for _, c := range sampleCommands() {
		t.Run(c.Type().String(), func(t *testing.T) {
			data := mustEncode(t, c)
			if CommandType(data[0]) != c.Type() {
				t.Fatalf("first byte %d, want %d", data[0], c.Type())
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, c) {
				t.Fatalf("round trip mismatch:\n got %#v\nwant %#v", got, c)
			}
			if again := mustEncode(t, got); !bytes.Equal(again, data) {
				t.Fatalf("re-encoding differs:\n%s\n%s", again, data)
			}
		})
		covered[c.Type()] = true
	}
	for _, typ := range CommandTypes() {
		if !covered[typ] {
			t.Errorf("command type %s has no round-trip case", typ)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, err := Decode(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Decode(nil) = %v, want ErrInvalid", err)
	}
	for _, b := range []byte{31, 99, byte(IgnoreUnknownFlag | 5)} {
		if _, err := Decode([]byte{b, '{', '}'}); !errors.Is(err, ErrUnknownCommand) {
			t.Errorf("Decode(type %d) = %v, want ErrUnknownCommand", b, err)
		}
	}
	// 0 marks the entries of binary encodings (codec_binary.go).
	if _, err := Decode([]byte{0, '{', '}'}); !errors.Is(err, ErrUnknownEncoding) {
		t.Errorf("Decode(0 '{' '}') = %v, want ErrUnknownEncoding", err)
	}
	if _, err := Decode([]byte{byte(CmdCreateFlavor), '{'}); !errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnknownCommand) {
		t.Errorf("Decode(truncated body) = %v, want ErrInvalid", err)
	}
	if _, err := Decode([]byte{byte(CmdNoop), '{', '}', 'x'}); err == nil {
		t.Error("Decode accepted trailing garbage")
	}
}

type bogusCommand struct{ Meta }

func (*bogusCommand) Type() CommandType { return 30 }

func TestEncodeRejectsUnregistered(t *testing.T) {
	if _, err := Encode(&bogusCommand{}); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("Encode(unregistered) = %v, want ErrUnknownCommand", err)
	}
	if _, err := Encode(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Encode(nil) = %v, want ErrInvalid", err)
	}
}

func TestIsIgnorableAndString(t *testing.T) {
	if IsIgnorable(nil) || IsIgnorable([]byte{byte(CmdNoop)}) {
		t.Error("IsIgnorable true for an entry without the flag")
	}
	if !IsIgnorable([]byte{byte(IgnoreUnknownFlag | 9)}) {
		t.Error("IsIgnorable false for an entry with the flag")
	}
	if got := CmdCreateFlavor.String(); got != "CreateFlavor" {
		t.Errorf("String() = %q", got)
	}
	if got := CommandType(99).String(); got != "CommandType(99)" {
		t.Errorf("String() = %q", got)
	}
	want := []CommandType{CmdRegisterHost, CmdSetHostStatus, CmdCreateFlavor, CmdDeleteFlavor,
		CmdSetFlavorExtraSpecs, CmdDeleteFlavorExtraSpec, CmdNoop, CmdCreateServer, CmdSetServerTask,
		CmdReserveNode, CmdReleaseNode, CmdDeleteServer, CmdSyncNodes, CmdSetHostDrain, CmdReassignServers,
		CmdReportInventory, CmdMigrateFlavors, CmdAdoptServer, CmdPurgeServers,
		CmdUpdateFlavor, CmdSetFlavorAccess, CmdCreateKeyPair, CmdDeleteKeyPair,
		CmdRequestServerAction, CmdFinishServerAction, CmdUpdateServer, CmdStartServerAction, CmdCreateServers, CmdReserveNodeAndTask,
		CmdRequestServerActionWithID, CmdCreateServerSets, CmdUpdateServerFields, CmdRebuildServer,
		CmdSetServerMetadata, CmdSetServerTags,
		CmdEnableFeature, CmdCreateServerGroup, CmdDeleteServerGroup, CmdResetServerState, CmdSetQuotaDefaults, CmdUpdateQuotas, CmdDeleteQuotas,
		CmdSetPortIntent, CmdRecordServerPort, CmdForgetServerPort, CmdRequestInterfaceAction, CmdFinishInterfaceAction, CmdStopAfterRebuild, CmdRecordExternalEvents,
		CmdRequestSecurityGroupAction, CmdFinishSecurityGroupAction}
	if got := CommandTypes(); !reflect.DeepEqual(got, want) {
		t.Errorf("CommandTypes() = %v, want %v", got, want)
	}
}
