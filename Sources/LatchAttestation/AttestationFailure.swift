import LatchModel

/// Why evidence was refused: a stable ``ErrorCode`` (one per kind of failed check) and the step that failed.
public struct AttestationFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code apps and operators branch on.
    public let code: ErrorCode
    /// The verification step that failed (as listed in ``AttestationTrace``).
    public let step: String
    /// A human-readable detail; never holds key material or secrets.
    public let detail: String

    public init(_ code: ErrorCode, step: String, _ detail: String) {
        self.code = code
        self.step = step
        self.detail = detail
    }

    public var description: String { "\(code.rawValue) at \(step): \(detail)" }

    public static func == (lhs: AttestationFailure, rhs: AttestationFailure) -> Bool { lhs.code == rhs.code && lhs.step == rhs.step }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(step)
    }
}

/// The steps a verifier ran, in order, for `latch attestation verify --json` and for logs.
public struct AttestationTrace: Sendable {
    /// One step: its name, whether it passed, and what was compared.
    public struct Step: Sendable, Hashable {
        public var name: String
        public var ok: Bool
        public var detail: String
    }

    public private(set) var steps: [Step] = []

    public init() {}

    /// Records a passed step.
    public mutating func passed(_ name: String, _ detail: String = "") {
        steps.append(Step(name: name, ok: true, detail: detail))
    }

    /// Records a failed step and returns the failure to throw.
    public mutating func failed(_ name: String, _ code: ErrorCode, _ detail: String) -> AttestationFailure {
        steps.append(Step(name: name, ok: false, detail: detail))
        return AttestationFailure(code, step: name, detail)
    }

    /// Records the step as passed (with `passed`) when `check` holds, else throws `code` with `failure`.
    public mutating func require(
        _ name: String, _ check: Bool, else code: ErrorCode, _ failure: @autoclosure () -> String, passed detail: String = ""
    ) throws(AttestationFailure) {
        guard check else { throw failed(name, code, failure()) }
        passed(name, detail)
    }
}
