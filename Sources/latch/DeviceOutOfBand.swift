import ArgumentParser
import Foundation
import LatchClient
import LatchModel

extension Device {
    /// `latch device oob <link>`: what a phone does with a scanned QR code or an opened app link.
    struct OutOfBand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "oob",
            abstract: "Redeem an out-of-band link or QR text: enrol this device's authenticator, approve (or --deny) a request, or deregister.")
        @OptionGroup var options: Options
        @Argument(help: "The app link (https://…/open?payload=…), the QR code's text, or the bare payload.") var link: String
        @Option(help: "The PIN: a PIN authenticator (else the software one).") var pin: String?
        @Option(help: "A name for an enrolled authenticator.") var name: String?
        @Flag(help: "Decline an approval instead of approving it.") var deny = false
        func run() async throws {
            let payload: OutOfBandPayload
            do {
                payload = try OutOfBandPayload(decoding: link)
            } catch {
                throw ValidationError("not an out-of-band link: \(error)")
            }
            let deny = deny
            try await Device.perform {
                let outcome = try await options.client().redeemOutOfBand(payload, authenticator: Fido.authenticator(pin: pin), pin: pin, name: name) { message in
                    print("request: \(message)")
                    return !deny
                }
                switch outcome {
                case .registered(let info): print("enrolled \(Fido.describe(info))")
                case .approved: print("approved")
                case .denied: print("denied")
                case .deregistered(let id): print("deregistered \(id)")
                }
            }
        }
    }

    /// `latch device link`: device linking from a signed-in device.
    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Device linking: an enrollment for this device's user, to redeem on the new device (a recent sign-in is needed).")
        @OptionGroup var options: Options
        @Option(help: "Write the QR code PNG to this file.") var qrOut: String?
        func run() async throws {
            try await Device.perform {
                let answer = try await options.client().linkDevice()
                if let qrOut, let png = Data(base64Encoded: String(answer.enrollment.qrCode.dataUri.drop { $0 != "," }.dropFirst())) {
                    try? png.write(to: URL(fileURLWithPath: qrOut))
                }
                print("status token: \(answer.enrollment.statusToken)")
                print("link: \(answer.enrollment.appLinkUri)")
            }
        }
    }
}
