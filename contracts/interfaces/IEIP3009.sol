// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IEIP3009
/// @notice Transfer with authorization (EIP-3009) with the function and typehash names of Circle's FiatTokenV2_2,
///         which x402's EVM facilitators call. Each authorization carries a random 32-byte nonce, usable once.
interface IEIP3009 {
    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice An authorization was used for a transfer.
    /// @param authorizer The account whose tokens moved.
    /// @param nonce The authorization's nonce.
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);

    /// @notice An unused authorization was canceled.
    /// @param authorizer The account that canceled it.
    /// @param nonce The authorization's nonce.
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice block.timestamp is not after the authorization's validAfter.
    error AuthorizationNotYetValid();

    /// @notice block.timestamp is not before the authorization's validBefore.
    error AuthorizationExpired();

    /// @notice The authorizer's nonce was already used or canceled.
    error AuthorizationUsedOrCanceled();

    /// @notice The signature is not the authorizer's over the authorization.
    error InvalidSignature();

    /// @notice receiveWithAuthorization was called by someone other than the payee.
    error CallerNotPayee();

    /*//////////////////////////////////////////////////////////////
                                 LOGIC
    //////////////////////////////////////////////////////////////*/

    /// @notice Moves `value` from `from` to `to` with `from`'s signed TransferWithAuthorization.
    /// @param from The payer, who signed.
    /// @param to The payee.
    /// @param value The amount.
    /// @param validAfter Valid only after this unix time.
    /// @param validBefore Valid only before this unix time.
    /// @param nonce The authorization's unique nonce.
    /// @param v The signature's recovery byte.
    /// @param r The signature's r.
    /// @param s The signature's s.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /// @notice As the (v, r, s) form, with a signature in bytes: 65-byte ECDSA, or EIP-1271 when `from` is a contract.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external;

    /// @notice As transferWithAuthorization, over a ReceiveWithAuthorization and callable only by `to`, so that the
    ///         authorization cannot be front-run out of a payee contract's call.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /// @notice As the (v, r, s) form of receiveWithAuthorization, with a signature in bytes.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external;

    /// @notice Cancels an unused authorization with the authorizer's signed CancelAuthorization.
    /// @param authorizer The authorizer, who signed.
    /// @param nonce The nonce to cancel.
    /// @param v The signature's recovery byte.
    /// @param r The signature's r.
    /// @param s The signature's s.
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;

    /// @notice As the (v, r, s) form of cancelAuthorization, with a signature in bytes.
    function cancelAuthorization(address authorizer, bytes32 nonce, bytes calldata signature) external;

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice keccak256("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,
    ///         uint256 validBefore,bytes32 nonce)")
    function TRANSFER_WITH_AUTHORIZATION_TYPEHASH() external view returns (bytes32);

    /// @notice keccak256("ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,
    ///         uint256 validBefore,bytes32 nonce)")
    function RECEIVE_WITH_AUTHORIZATION_TYPEHASH() external view returns (bytes32);

    /// @notice keccak256("CancelAuthorization(address authorizer,bytes32 nonce)")
    function CANCEL_AUTHORIZATION_TYPEHASH() external view returns (bytes32);

    /// @notice The EIP-712 domain separator the authorizations are signed under.
    function DOMAIN_SEPARATOR() external view returns (bytes32);

    /// @notice The EIP-712 domain version ("2" for USDC), as FiatToken's version(); the domain name is name().
    function version() external view returns (string memory);

    /// @notice Whether the authorizer's nonce has been used or canceled.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
}
