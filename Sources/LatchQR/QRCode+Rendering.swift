// Rendering a QRCode as a PNG image or a data: URI.

extension QRCode {
    /// Accepted pixel size of one module.
    public static let scaleRange = 1...32
    /// Accepted quiet-zone width in modules. ISO/IEC 18004 §6.3.8 asks for
    /// 4; smaller values are allowed for embedding in padded layouts.
    public static let borderRange = 0...16

    /// A 1-bit greyscale PNG of the symbol: `scale` pixels per module and a
    /// light quiet zone of `border` modules on every side. Out-of-range
    /// arguments are clamped to `scaleRange` and `borderRange`.
    public func png(scale: Int = 4, border: Int = 4) -> [UInt8] {
        let scale = min(max(scale, QRCode.scaleRange.lowerBound), QRCode.scaleRange.upperBound)
        let border = min(max(border, QRCode.borderRange.lowerBound), QRCode.borderRange.upperBound)
        let modulesAcross = size + 2 * border
        let width = modulesAcross * scale
        let stride = PNG.rowBytes(width: width, bitDepth: 1)

        var scanlines: [UInt8] = []
        scanlines.reserveCapacity(stride * width)
        for moduleY in 0..<modulesAcross {
            // Bit 1 = white. Build one pixel row per module row, repeat it.
            var line = [UInt8](repeating: 0xFF, count: stride)
            for moduleX in 0..<modulesAcross where self[moduleX - border, moduleY - border] {
                for px in (moduleX * scale)..<((moduleX + 1) * scale) {
                    line[px >> 3] &= ~UInt8(0x80 >> (px & 7))
                }
            }
            for _ in 0..<scale { scanlines += line }
        }
        return PNG.grayscale(width: width, height: width, bitDepth: 1, scanlines: scanlines)
    }

    /// `data:image/png;base64,…` for embedding the PNG in HTML.
    public func dataURI(scale: Int = 4, border: Int = 4) -> String {
        "data:image/png;base64," + Base64.encode(png(scale: scale, border: border))
    }
}

/// Standard Base64 with padding (RFC 4648 §4).
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let remaining = bytes.count - i
            let b0 = UInt32(bytes[i])
            let b1 = remaining > 1 ? UInt32(bytes[i + 1]) : 0
            let b2 = remaining > 2 ? UInt32(bytes[i + 2]) : 0
            let triple = (b0 << 16) | (b1 << 8) | b2
            out.append(alphabet[Int((triple >> 18) & 63)])
            out.append(alphabet[Int((triple >> 12) & 63)])
            out.append(remaining > 1 ? alphabet[Int((triple >> 6) & 63)] : UInt8(ascii: "="))
            out.append(remaining > 2 ? alphabet[Int(triple & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
