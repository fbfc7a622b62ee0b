// Package jsonx is how the module's internal code decodes JSON: documents
// from other parties (metadata, token responses, claims, client metadata
// documents, user-info answers) by oauthmeta.DecodeJSON, the one rule the
// wire types are parsed by, under the names [DecodeObject] and
// [DecodeArray]; and files the operator writes by [DecodeObjectStrict],
// which also refuses unknown names (a misspelt rule must not be ignored).
//
// The standard library's encoding/json (v1) matches object names without
// regard to case and lets a later duplicate name overwrite an earlier one,
// so {"issuer":"https://good","ISSUER":"https://evil"} decodes to whichever
// comes last: for security documents a parser differential waiting to be
// exploited. The rule decodes with github.com/go-json-experiment/json (the
// reference implementation of encoding/json/v2), whose defaults are what
// is wanted: names match case-sensitively, duplicate names are an error,
// invalid UTF-8 is an error, and unknown names are ignored (RFC 8414 §3.2
// and RFC 9728 §3.2 tell clients to ignore unrecognised parameters).
//
// [DecodeValue] decodes one value of any kind cut out of a document (a JWT
// claim), and [Members] walks the members of an object without copying
// their values (the envelope of a large JSON-RPC message), by the same rule.
//
// jsonx does not encode; encoding uses the standard library.
package jsonx
