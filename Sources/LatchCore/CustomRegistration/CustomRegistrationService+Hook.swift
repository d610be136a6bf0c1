import Crypto
import Foundation
import LatchHookKit
import LatchJOSE
import LatchModel
import Logging

/// Calling the hook: retries, and reading its answer.
extension CustomRegistrationService {
    // MARK: The hook call

    /// Calls the hook with the provider's retries: the hook's answer (a status in 2000–2999, 4000–4999 or 5000–5999) or the
    /// error for the app, and how many attempts are still to be counted on the transaction.
    ///
    /// Every attempt carries its own `Idempotency-Key` number. On a transaction that exists (`reserving`) each number is
    /// taken from the store before the call (``CustomRegistrationWrites/reserveCustomAttempt(id:at:ifUnavailable:)``), so
    /// concurrent requests — on any replica — never send a hook two identical requests, and every call is counted
    /// even if Latch stops during it. A new transaction's id is known to this request only: it numbers 1, 2, 3 …
    func call(_ provider: CustomProvider, _ request: HookRequest, reserving: Bool) async throws -> (Int, Result<HookResponse, LatchError>) {
        let secret: String
        let body: [UInt8]
        do {
            secret = String(decoding: try sealer.open(provider.sealedSecret, keyID: Self.sealingContext(provider.id)), as: UTF8.self)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            body = Array(try encoder.encode(request))
        } catch {
            logger.error("custom provider secret unreadable", metadata: ["provider": "\(provider.id)", "error": "\(error)"])
            return (0, .failure(LatchError(.serverError, "the custom identity provider's secret cannot be read")))
        }
        var attempt = 0
        var outcome: Result<HookAnswer, HookCallError>
        repeat {
            if attempt > 0 { await sleep(HookRetryPolicy.delayMilliseconds(beforeRetry: attempt)) }
            attempt += 1
            var number = attempt
            if reserving {
                let now = clock.seconds()
                let id = request.transactionId
                // Refused (Refusal.transactionGone) when another request finished it, or it expired, meanwhile.
                number = Int(try await store.write { $0.reserveCustomAttempt(id: id, at: now, ifUnavailable: Refusal.transactionGone) }.value)
            }
            let key = HookIdempotencyKey(transactionId: request.transactionId, step: request.step, attempt: number)
            let headers = [
                ("Content-Type", "application/json"),
                (HookSignature.headerName, HookSignature.header(secret: secret, timestamp: clock.seconds(), body: body)),
                (HookSignature.idempotencyKeyHeaderName, key.description),
                ("User-Agent", "Latch-Hook/1"),
            ]
            outcome = await caller.post(url: provider.hookURL, body: body, headers: headers, timeoutSeconds: provider.timeout)
        } while attempt <= provider.retries && HookRetryPolicy.shouldRetry(outcome)
        let result = Self.interpret(outcome, attempts: attempt)
        if case .failure(let error) = result {
            logger.warning(
                "hook call failed",
                metadata: ["provider": "\(provider.id)", "step": "\(request.step.rawValue)", "attempts": "\(attempt)", "error": "\(error.description)"])
        }
        return (reserving ? 0 : attempt, result)
    }

    /// The hook's last outcome as an answer or an error for the app.
    static func interpret(_ outcome: Result<HookAnswer, HookCallError>, attempts: Int) -> Result<HookResponse, LatchError> {
        let tries = attempts == 1 ? "" : " (\(attempts) attempts)"
        switch outcome {
        case .failure(.timeout):
            return .failure(LatchError(.hookTimeout, "the registration service did not answer in time\(tries)"))
        case .failure(.network(let reason)):
            return .failure(LatchError(.hookUnavailable, "the registration service cannot be reached\(tries)", detail: reason))
        case .failure(.redirect(let status)):
            return .failure(LatchError(.hookInvalidAnswer, "the registration service redirected (HTTP \(status)); redirects are not followed"))
        case .failure(.tooLarge):
            return .failure(LatchError(.hookInvalidAnswer, "the registration service's answer is too large"))
        case .failure(.refused(let reason)):
            return .failure(LatchError(.hookAddressRefused, "the registration service's address is not allowed", detail: reason))
        case .success(let answer):
            if answer.status == 429 || (500...599).contains(answer.status) {
                return .failure(LatchError(.hookUnavailable, "the registration service answered HTTP \(answer.status)\(tries)"))
            }
            guard (200...299).contains(answer.status) else {
                return .failure(LatchError(.hookInvalidAnswer, "the registration service answered HTTP \(answer.status)"))
            }
            return parse(answer.body)
        }
    }

    /// `{status, data?, user?: {id?, username, attributes?, amr?}}`, strictly.
    static func parse(_ body: [UInt8]) -> Result<HookResponse, LatchError> {
        func invalid(_ reason: String) -> Result<HookResponse, LatchError> {
            .failure(LatchError(.hookInvalidAnswer, "the registration service's answer is unusable: \(reason)"))
        }
        guard let value = try? JSONValue.parse(body), case .object(let object) = value else { return invalid("not a JSON object") }
        guard case .int(let status)? = object["status"] else { return invalid("status must be an integer") }
        let data = object["data"].flatMap { $0 == .null ? nil : $0 }
        if let data, data.serialized().count > maximumDataBytes { return invalid("data exceeds \(maximumDataBytes) bytes") }
        var user: HookUser?
        switch object["user"] {
        case nil, .null?: break
        case .object(let fields)?:
            guard case .string(let username)? = fields["username"] else { return invalid("user.username must be a string") }
            var hookUser = HookUser(username: username)
            switch fields["id"] {
            case nil, .null?: break
            case .string(let id)?: hookUser.id = id
            default: return invalid("user.id must be a string")
            }
            switch fields["attributes"] {
            case nil, .null?: break
            case .object(let attributes)?: hookUser.attributes = attributes
            default: return invalid("user.attributes must be an object")
            }
            switch fields["amr"] {
            case nil, .null?: break
            case .array(let values)?:
                let names = values.compactMap(\.stringValue)
                guard names.count == values.count else { return invalid("user.amr must be an array of strings") }
                hookUser.amr = names
            default: return invalid("user.amr must be an array of strings")
            }
            user = hookUser
        default: return invalid("user must be an object")
        }
        let response = HookResponse(status: Int(clamping: status), data: data, user: user)
        guard response.outcome != .invalid else {
            return invalid("status \(status) is outside 2000–2999, 4000–4999 and 5000–5999")
        }
        return .success(response)
    }
}
