package v1

// Hub marks v1 as the version Welcome's other versions convert to and from.
func (*Welcome) Hub() {}

// ConversionDataAnnotation holds, on a Welcome at v1, what v1alpha1 has and v1 has no field for,
// as JSON: {"spec":{"password":"…"}}. A v1alpha1 Welcome written, stored at v1 and read back at
// v1alpha1 thus loses nothing. The annotation is the conversion's: a v1alpha1 view never shows it.
const ConversionDataAnnotation = "auth.seedlabs.dev/conversion-data"
