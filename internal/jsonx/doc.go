// Package jsonx decodes JSON documents that arrive from other parties
// (metadata, token responses, client metadata documents) strictly.
//
// The standard library's encoding/json (v1) matches object names without
// regard to case and lets a later duplicate name overwrite an earlier one, so
// {"issuer":"https://good","ISSUER":"https://evil"} decodes to whichever comes
// last. For security documents that is a parser differential waiting to be
// exploited. jsonx decodes with github.com/go-json-experiment/json (the
// reference implementation of encoding/json/v2), whose defaults are exactly
// what is wanted here: names match case-sensitively, duplicate names are an
// error, invalid UTF-8 is an error, and unknown names are ignored (RFC 8414
// §3.2 and RFC 9728 §3.2 tell clients to ignore unrecognised parameters).
//
// [DecodeObjectStrict] also refuses unknown names, for files the operator
// writes (a misspelt rule must not be ignored); [DecodeArray] decodes a
// top-level array (GitHub's /user/emails) by the same rules, [DecodeValue]
// one value of any kind cut out of a document (a JWT claim), and [Members]
// walks the members of an object by the same rules without copying their
// values (the envelope of a large JSON-RPC message).
//
// jsonx does not encode; encoding uses the standard library.
package jsonx
