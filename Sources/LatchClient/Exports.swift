// Apps use the wire types (JSONValue claims, RegistrationMethod, error codes) with the client: one import.
@_exported import LatchModel
