// Apps use the wire types (JSONValue claims, ChallengeType, error codes) with the client: one import.
@_exported import LatchModel
