// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IEIP3009} from "../interfaces/IEIP3009.sol";

/// @title TestUSDC
/// @notice USDC for local chains: 6 decimals, owner mint, and EIP-3009 under the EIP-712 domain of USDC on Base
///         Sepolia (name "USDC", version "2"), so x402 payments signed for it verify like real ones.
contract TestUSDC is IEIP3009, ERC20, EIP712, Ownable {
    /// @inheritdoc IEIP3009
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    /// @inheritdoc IEIP3009
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    /// @inheritdoc IEIP3009
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");

    string private constant EIP712_VERSION = "2";

    mapping(address authorizer => mapping(bytes32 nonce => bool)) private _authorizationStates;

    /// @param owner The account allowed to mint.
    constructor(address owner) ERC20("USDC", "USDC") EIP712("USDC", EIP712_VERSION) Ownable(owner) {}

    /// @notice Mints `value` to `to`. Only the owner.
    function mint(address to, uint256 value) external onlyOwner {
        _mint(to, value);
    }

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /*//////////////////////////////////////////////////////////////
                                EIP-3009
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IEIP3009
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
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
            from,
            to,
            value,
            validAfter,
            validBefore,
            nonce,
            abi.encodePacked(r, s, v)
        );
    }

    /// @inheritdoc IEIP3009
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @inheritdoc IEIP3009
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
    ) external {
        if (msg.sender != to) revert CallerNotPayee();
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH,
            from,
            to,
            value,
            validAfter,
            validBefore,
            nonce,
            abi.encodePacked(r, s, v)
        );
    }

    /// @inheritdoc IEIP3009
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external {
        if (msg.sender != to) revert CallerNotPayee();
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @inheritdoc IEIP3009
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        _cancelAuthorization(authorizer, nonce, abi.encodePacked(r, s, v));
    }

    /// @inheritdoc IEIP3009
    function cancelAuthorization(address authorizer, bytes32 nonce, bytes calldata signature) external {
        _cancelAuthorization(authorizer, nonce, signature);
    }

    /// @inheritdoc IEIP3009
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    /// @inheritdoc IEIP3009
    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    /// @inheritdoc IEIP3009
    function version() external pure returns (string memory) {
        return EIP712_VERSION;
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

    function _transferWithAuthorization(
        bytes32 typehash,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        if (block.timestamp <= validAfter) revert AuthorizationNotYetValid();
        if (block.timestamp >= validBefore) revert AuthorizationExpired();
        _useAuthorization(
            from, nonce, keccak256(abi.encode(typehash, from, to, value, validAfter, validBefore, nonce)), signature
        );
        emit AuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) private {
        _useAuthorization(
            authorizer, nonce, keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce)), signature
        );
        emit AuthorizationCanceled(authorizer, nonce);
    }

    /// @dev Consumes the authorizer's nonce once its signature over `structHash` checks out.
    function _useAuthorization(address authorizer, bytes32 nonce, bytes32 structHash, bytes memory signature)
        private
    {
        if (_authorizationStates[authorizer][nonce]) revert AuthorizationUsedOrCanceled();
        if (!SignatureChecker.isValidSignatureNow(authorizer, _hashTypedDataV4(structHash), signature)) {
            revert InvalidSignature();
        }
        _authorizationStates[authorizer][nonce] = true;
    }
}
