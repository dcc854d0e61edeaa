// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {TransparentUpgradeableProxy} from "@openzeppelin/contracts/proxy/transparent/TransparentUpgradeableProxy.sol";
import {Initializable} from "@openzeppelin/contracts/proxy/utils/Initializable.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Pausable} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Pausable.sol";

/*
 * TEST ONLY: the ERC-20s of the token scanner's "token world" (test/support/evm/tokens.ts deploys them next
 * to a Uniswap V2 and pools each against WETH). All have 18 decimals and mint their whole supply to the
 * deployer, who is also the owner where there is one. Each header says what a scanner should find.
 *
 * "The pair" is the token's Uniswap V2 pair: a transfer TO it is a sell, a transfer FROM it a buy.
 */

/**
 * CleanToken: nothing to find. A fixed supply minted once, no owner, no admin function, no transfer rule;
 * buys and sells go through at the pool price.
 */
contract CleanToken is ERC20 {
    constructor(string memory name_, string memory symbol_, uint256 supply) ERC20(name_, symbol_) {
        _mint(msg.sender, supply);
    }
}

/**
 * MintableToken: the owner may mint any amount to anyone (unlimited supply). Deployed twice: with a live
 * owner (a risk), and after `renounceOwnership()` (owner() is zero: `mint` can never be called again).
 */
contract MintableToken is ERC20, Ownable {
    constructor(string memory name_, string memory symbol_, uint256 supply)
        ERC20(name_, symbol_)
        Ownable(msg.sender)
    {
        _mint(msg.sender, supply);
    }

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}

/**
 * PausableToken: the owner may freeze every transfer (`pause()`), buys and sells alike. Deployed unpaused,
 * so trading works until the owner decides otherwise.
 */
contract PausableToken is ERC20, ERC20Pausable, Ownable {
    constructor(string memory name_, string memory symbol_, uint256 supply)
        ERC20(name_, symbol_)
        Ownable(msg.sender)
    {
        _mint(msg.sender, supply);
    }

    function pause() external onlyOwner {
        _pause();
    }

    function unpause() external onlyOwner {
        _unpause();
    }

    function _update(address from, address to, uint256 value) internal override(ERC20, ERC20Pausable) {
        super._update(from, to, value);
    }
}

/**
 * UpgradeableToken: the implementation behind TokenProxy. What a scanner should find is the proxy: an
 * EIP-1967 implementation slot pointing here and an admin (a ProxyAdmin) that can swap the code for
 * anything, plus an owner who may mint without limit.
 *
 * OpenZeppelin's upgradeable package (contracts-upgradeable) is not installed, so this is its plain ERC20
 * and Ownable made initializable by hand: name and symbol live in this contract's own storage (set by `initialize`, read by
 * the overridden name()/symbol()), and `initialize` sets the owner and mints the supply in the PROXY's
 * storage. The implementation itself stays inert: no initializer can run on it, no owner, no supply.
 */
contract UpgradeableToken is Initializable, ERC20, Ownable {
    string private _tokenName;
    string private _tokenSymbol;

    constructor() ERC20("", "") Ownable(msg.sender) {
        _disableInitializers();
        _transferOwnership(address(0));
    }

    function initialize(string calldata name_, string calldata symbol_, address owner_, uint256 supply)
        external
        initializer
    {
        _tokenName = name_;
        _tokenSymbol = symbol_;
        _transferOwnership(owner_);
        _mint(owner_, supply);
    }

    function name() public view override returns (string memory) {
        return _tokenName;
    }

    function symbol() public view override returns (string memory) {
        return _tokenSymbol;
    }

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}

/**
 * TokenProxy: OpenZeppelin's TransparentUpgradeableProxy, unchanged (declared here only so that solc emits
 * its bytecode). Its constructor writes the EIP-1967 implementation slot, deploys a ProxyAdmin owned by
 * `initialOwner` (the proxy's first CREATE, nonce 1) into the admin slot, and delegatecalls `data`.
 */
contract TokenProxy is TransparentUpgradeableProxy {
    constructor(address logic, address initialOwner, bytes memory data)
        payable
        TransparentUpgradeableProxy(logic, initialOwner, data)
    {}
}

/**
 * FeeToken: every transfer not from or to the owner pays `feeBps` basis points to the owner (a buy or a
 * sell of 100 arrives as 95 at 500 bps), and the owner may change the fee at any time, up to 100 %.
 */
contract FeeToken is ERC20, Ownable {
    uint256 public feeBps;

    error FeeTooHigh(uint256 feeBps);

    constructor(string memory name_, string memory symbol_, uint256 supply, uint256 feeBps_)
        ERC20(name_, symbol_)
        Ownable(msg.sender)
    {
        _mint(msg.sender, supply);
        setFee(feeBps_);
    }

    function setFee(uint256 feeBps_) public onlyOwner {
        if (feeBps_ > 10_000) revert FeeTooHigh(feeBps_);
        feeBps = feeBps_;
    }

    function _update(address from, address to, uint256 value) internal override {
        address owner_ = owner();
        if (from != address(0) && to != address(0) && from != owner_ && to != owner_) {
            uint256 fee = (value * feeBps) / 10_000;
            super._update(from, owner_, fee);
            value -= fee;
        }
        super._update(from, to, value);
    }
}

/**
 * HoneypotToken: anyone can buy and move tokens between wallets, but only the owner can sell: a transfer to
 * `pair` reverts for everyone else. A simulated buy then sell must show the sell failing.
 */
contract HoneypotToken is ERC20, Ownable {
    address public pair;

    error TransferBlocked(address from);

    constructor(string memory name_, string memory symbol_, uint256 supply)
        ERC20(name_, symbol_)
        Ownable(msg.sender)
    {
        _mint(msg.sender, supply);
    }

    function setPair(address pair_) external onlyOwner {
        pair = pair_;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (to == pair && to != address(0) && from != owner()) revert TransferBlocked(from);
        super._update(from, to, value);
    }
}

/**
 * BlacklistToken: the owner may blacklist any address, which can then neither send nor receive (its
 * balance is frozen). Nobody is blacklisted at deployment.
 */
contract BlacklistToken is ERC20, Ownable {
    mapping(address account => bool) public isBlacklisted;

    error Blacklisted(address account);

    constructor(string memory name_, string memory symbol_, uint256 supply)
        ERC20(name_, symbol_)
        Ownable(msg.sender)
    {
        _mint(msg.sender, supply);
    }

    function blacklist(address account) external onlyOwner {
        isBlacklisted[account] = true;
    }

    function unblacklist(address account) external onlyOwner {
        isBlacklisted[account] = false;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (isBlacklisted[from]) revert Blacklisted(from);
        if (isBlacklisted[to]) revert Blacklisted(to);
        super._update(from, to, value);
    }
}

/**
 * TimeBombToken: a delayed honeypot. Sells (transfers to `pair`) work for the first 30 minutes after
 * deployment and revert for everyone but the owner afterwards: a buy-then-sell simulated at the current
 * block passes, the same sell simulated in a later block (+1 h) must fail.
 */
contract TimeBombToken is ERC20, Ownable {
    uint256 public constant GRACE_PERIOD = 30 minutes;
    uint256 public immutable launchedAt;
    address public pair;

    error TransferBlocked(address from);

    constructor(string memory name_, string memory symbol_, uint256 supply)
        ERC20(name_, symbol_)
        Ownable(msg.sender)
    {
        launchedAt = block.timestamp;
        _mint(msg.sender, supply);
    }

    function setPair(address pair_) external onlyOwner {
        pair = pair_;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (to == pair && to != address(0) && from != owner() && block.timestamp > launchedAt + GRACE_PERIOD) {
            revert TransferBlocked(from);
        }
        super._update(from, to, value);
    }
}

/**
 * LimitsToken: anti-whale limits the owner controls: at most `maxTxAmount` per transfer, at most
 * `maxWalletSize` held by any wallet (the pair excepted), and a `tradingOpen` switch (already open after
 * deployment; `enableTrading()` is the usual launch function). The owner is exempt. Setting a limit to 0
 * makes every non-owner transfer revert: a sell can be blocked at will.
 */
contract LimitsToken is ERC20, Ownable {
    uint256 public maxTxAmount;
    uint256 public maxWalletSize;
    bool public tradingOpen = true;
    address public pair;

    error TradingNotOpen();
    error MaxTxExceeded(uint256 value, uint256 maxTxAmount);
    error MaxWalletExceeded(uint256 balance, uint256 maxWalletSize);

    constructor(string memory name_, string memory symbol_, uint256 supply, uint256 maxTx, uint256 maxWallet)
        ERC20(name_, symbol_)
        Ownable(msg.sender)
    {
        _mint(msg.sender, supply);
        maxTxAmount = maxTx;
        maxWalletSize = maxWallet;
    }

    function setMaxTxAmount(uint256 amount) external onlyOwner {
        maxTxAmount = amount;
    }

    function setMaxWalletSize(uint256 amount) external onlyOwner {
        maxWalletSize = amount;
    }

    function enableTrading() external onlyOwner {
        tradingOpen = true;
    }

    /// The pair is exempt from the wallet limit (it holds the pool's side of the liquidity).
    function setPair(address pair_) external onlyOwner {
        pair = pair_;
    }

    function _update(address from, address to, uint256 value) internal override {
        address owner_ = owner();
        if (from != address(0) && to != address(0) && from != owner_ && to != owner_) {
            if (!tradingOpen) revert TradingNotOpen();
            if (value > maxTxAmount) revert MaxTxExceeded(value, maxTxAmount);
            if (to != pair && balanceOf(to) + value > maxWalletSize) {
                revert MaxWalletExceeded(balanceOf(to) + value, maxWalletSize);
            }
        }
        super._update(from, to, value);
    }
}
